package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/seedf75a49c6/weave/internal/iptables"
	"github.com/seedf75a49c6/weave/internal/version"
	ourmesh "github.com/seedf75a49c6/weave/mesh"
	"github.com/seedf75a49c6/weave/prog/weaver/daemon"
	"github.com/seedf75a49c6/weave/router"
)

// usageError is a bad command line (exit code 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// action is what the command line asks for besides running the daemon.
type action int

const (
	actionRun action = iota
	actionVersion
	actionPrintPeerName
)

// run parses args and runs weaver until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	cfg, act, err := parseFlags(args, stderr, getenv)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return &usageError{err}
	}
	if _, err := iptables.Parse(getenv(iptables.EnvVar)); err != nil {
		return &usageError{err} // every iptables call would fail on it later
	}
	switch act {
	case actionVersion:
		_, err := fmt.Fprintf(stdout, "weave router %s\n", version.Version)
		return err
	case actionPrintPeerName:
		_, statErr := os.Stat(filepath.Join(cfg.DataDir, ourmesh.PeerNameFile))
		name, err := daemon.ResolvePeerName(cfg)
		if err != nil {
			return fmt.Errorf("load peer name: %w", err)
		}
		if errors.Is(statErr, fs.ErrNotExist) { // we created it: not an earlier launch's
			if err := daemon.NotePrintedPeerName(cfg.DataDir); err != nil {
				return fmt.Errorf("note the printed peer name: %w", err)
			}
		}
		_, err = fmt.Fprintln(stdout, name.String())
		return err
	}
	level, _ := daemon.ParseLogLevel(cfg.LogLevel) // validated
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	return daemon.Run(ctx, cfg, log)
}

// parseFlags maps Weave 2.8.1's weaver flags onto daemon.Config and
// validates the result.
func parseFlags(args []string, stderr io.Writer, getenv func(string) string) (daemon.Config, action, error) {
	cfg := daemon.DefaultConfig(getenv)
	envPassword := cfg.Password
	cfg.Password = "" // never show the password as a flag default
	fs := flag.NewFlagSet("weaver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var version, printName bool
	registerFlags(fs, &cfg, &version, &printName)
	if err := fs.Parse(args); err != nil {
		return cfg, actionRun, err
	}
	if !flagSet(fs, "password") {
		cfg.Password = envPassword
	} else if cfg.Password == "" {
		cfg.PasswordSetEmpty = true
	}
	cfg.Peers = fs.Args()
	switch {
	case version:
		return cfg, actionVersion, nil
	case printName:
		return cfg, actionPrintPeerName, nil
	}
	return cfg, actionRun, cfg.Validate()
}

func flagSet(fs *flag.FlagSet, name string) (set bool) {
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func registerFlags(fs *flag.FlagSet, c *daemon.Config, version, printName *bool) {
	fs.BoolVar(version, "version", false, "print version and exit")
	fs.BoolVar(printName, "print-peer-name", false, "print the peer name and exit")
	fs.StringVar(&c.Name, "name", c.Name, "peer name (MAC address); default: persisted in --data-dir, else Weave Net 2.8.1's (its data file, the bridge MAC, machine-id), else random")
	fs.StringVar(&c.NickName, "nickname", c.NickName, "peer nickname")
	fs.StringVar(&c.Host, "host", c.Host, "router bind address (TCP and UDP)")
	fs.IntVar(&c.Port, "port", c.Port, "router port (TCP mesh and UDP sleeve)")
	fs.StringVar(&c.Password, "password", "", "network password (default $WEAVE_PASSWORD)")
	fs.IntVar(&c.ConnLimit, "conn-limit", c.ConnLimit, "connection limit (0 for unlimited)")
	fs.Func("trusted-subnets", "comma-separated CIDRs of trusted networks", func(s string) error {
		p, err := parsePrefixes(s)
		c.TrustedSubnets = p
		return err
	})
	fs.BoolVar(&c.NoDiscovery, "no-discovery", c.NoDiscovery, "disable peer discovery")
	fs.IntVar(&c.MinProtocolVersion, "min-protocol-version", c.MinProtocolVersion, "minimum weave protocol version (1 or 2)")
	fs.BoolVar(&c.Resume, "resume", c.Resume, "connect to the persisted targets (forbids peer arguments)")
	fs.StringVar(&c.HTTPAddr, "http-addr", c.HTTPAddr, "address for the HTTP API (host:port, or /path for a unix socket)")
	fs.StringVar(&c.StatusAddr, "status-addr", c.StatusAddr, "address for the read-only status API")
	fs.BoolVar(&c.PProf, "pprof", c.PProf, "serve Go profiling at /debug/pprof/ on --http-addr (off by default)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "address for Prometheus /metrics (served with the read-only status API)")
	fs.StringVar(&c.Bridge, "weave-bridge", c.Bridge, "name of the weave bridge")
	fs.IntVar(&c.MTU, "mtu", c.MTU, "bridge MTU (0 = underlay MTU - 50 with the fast path, - 70 over an IPv6 underlay; 65535 with --no-fastdp)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "logging level (debug, info, warning, error)")
	fs.BoolVar(&c.PktDebug, "pkt-debug", c.PktDebug, "log every frame (debug level)")
	fs.DurationVar(&c.BusyPoll, "busy-poll", router.DefaultBusyPoll, "after a frame that follows a pause, poll the capture and sleeve sockets this long before sleeping (lower latency at some CPU); 0 = off")
	fs.StringVar(&c.SleeveFraming, "sleeve-framing", "segments", "sleeve framing offered to our own routers for frames over the path MTU: segments (UDP GSO/GRO, falls back to jumbo), jumbo (one IP-fragmented datagram) or weave (path-MTU frames, as Weave 2.8.1)")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "persistent state directory (default $WEAVE_DATA_DIR or /var/lib/weave)")
	fs.StringVar(&c.RunDir, "run-dir", c.RunDir, "runtime state directory (default $WEAVE_RUN_DIR or /run/weave)")
	fs.StringVar(&c.DBPrefix, "db-prefix", c.DBPrefix, "Weave Net 2.8.1's data file <prefix>data.db, adopted when --data-dir has no IPAM database (default <data-dir>/weave-net)")
	fs.StringVar(&c.HostRoot, "host-root", c.HostRoot, "read the host's machine-id and system UUID under this directory for Weave Net 2.8.1's peer name (default $WEAVE_HOST_ROOT or /)")
	registerCompatFlags(fs, c)
	registerDNSFlags(fs, c)
	registerLivenessFlags(fs, c)
	registerPluginFlags(fs, c)
	registerProxyFlags(fs, c)
	fs.BoolVar(&c.ExpectNPC, "expect-npc", c.ExpectNPC, "close the bridge to new connections weave-npc has not allowed (weave-npc enforces NetworkPolicies)")
}

func registerLivenessFlags(fs *flag.FlagSet, c *daemon.Config) {
	fs.BoolVar(&c.NoLiveness, "no-liveness", c.NoLiveness, "no memberlist failure detection (dead peers are left to mesh's timeouts)")
	fs.IntVar(&c.LivenessPort, "liveness-port", c.LivenessPort, "UDP and TCP port of the liveness detector (the same on every host)")
	fs.DurationVar(&c.IPAllocReclaimAfter, "ipalloc-reclaim-after", c.IPAllocReclaimAfter, "reclaim the IPAM space of a peer dead this long, e.g. 10m (0 = never)")
}

// registerPluginFlags registers the Docker plugin's flags (2.8.1's names).
func registerPluginFlags(fs *flag.FlagSet, c *daemon.Config) {
	fs.BoolVar(&c.Plugin, "plugin", c.Plugin, "serve the Docker network and IPAM plugin and create the Docker network \"weave\"")
	fs.BoolVar(&c.NoPlugin, "no-plugin", c.NoPlugin, "do not serve the Docker plugin (overrides --plugin)")
	fs.StringVar(&c.PluginSocket, "plugin-socket", c.PluginSocket, "socket of the global-scope network driver \"weave\"")
	fs.BoolVar(&c.PluginV2, "plugin-v2", c.PluginV2, "serve only --plugin-socket, with the global-scope network driver and the IPAM driver (a Docker v2 managed plugin on a swarm)")
	fs.StringVar(&c.PluginMeshSocket, "plugin-mesh-socket", c.PluginMeshSocket, "socket of the local-scope network and IPAM driver \"weavemesh\"")
	fs.StringVar(&c.DockerAPI, "docker-api", c.DockerAPI, "Docker API endpoint (default $DOCKER_HOST or unix:///var/run/docker.sock); \"\" = no Docker calls")
}

// registerCompatFlags registers flags accepted for compatibility with
// Weave 2.8.1's command line, and the IPAM flags; DNS, plugin and proxy
// are not implemented yet.
func registerCompatFlags(fs *flag.FlagSet, c *daemon.Config) {
	const later = " (accepted; not implemented yet)"
	fs.StringVar(&c.IPAllocRange, "ipalloc-range", c.IPAllocRange, "IP range for IPAM; \"\" = IPAM off")
	fs.StringVar(&c.IPAllocInit, "ipalloc-init", c.IPAllocInit, "IPAM ring creation: consensus[=N] (default: N = peers given + 1), seed=PEER,... or observer")
	fs.StringVar(&c.IPAllocDefaultSubnet, "ipalloc-default-subnet", c.IPAllocDefaultSubnet, "default IPAM subnet (default: the whole --ipalloc-range)")
	fs.DurationVar(&c.IPAllocConsensusTimeout, "ipalloc-consensus-timeout", c.IPAllocConsensusTimeout, "how long an allocation waits for IPAM consensus before failing (0 = 60s)")
	fs.BoolVar(&c.NoFastDP, "no-fastdp", c.NoFastDP, "disable the VXLAN fast datapath (sleeve only; bridge MTU 65535 unless --mtu)")
	fs.BoolVar(&c.NoBridgedFastDP, "no-bridged-fastdp", c.NoBridgedFastDP, "disable bridged fast datapath"+later)
	fs.StringVar(&c.Datapath, "datapath", c.Datapath, "ODP datapath name"+later)
	fs.BoolVar(&c.NoMasqLocal, "no-masq-local", c.NoMasqLocal, "do not masquerade traffic to this peer's own address ranges (local pods keep the client's address)")
}

func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("invalid CIDR %q", part)
		}
		out = append(out, p)
	}
	return out, nil
}
