package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	wmesh "github.com/weaveworks/mesh"

	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/liveness"
	"github.com/seedf75a49c6/weave/plugin/docker"
)

// Defaults, as Weave Net 2.8.1's `weave launch` passes them to httpapi.
const (
	DefaultPort         = 6783
	DefaultConnLimit    = 200
	DefaultHTTPAddr     = "127.0.0.1:6784"
	DefaultBridge       = "weave"
	DefaultIPAllocRange = "10.32.0.0/12"
	DefaultDataDir      = "/var/lib/weave"
	DefaultRunDir       = "/run/weave"
	DefaultDockerAPI    = "unix:///var/run/docker.sock"
	// SleeveBridgeMTU is the bridge MTU when --mtu is 0: like Weave's
	// sleeve mode the bridge takes jumbo frames and sleeve fragments.
	SleeveBridgeMTU = 65535
)

// Config is the weaver daemon configuration. Field comments give the flag
// and the default that DefaultConfig sets.
type Config struct {
	Name               string         // --name: peer name; "" = persisted (data dir "peername"), else as 2.8.1 derives it (ResolvePeerName)
	NickName           string         // --nickname: default the hostname
	Host               string         // --host: bind address for TCP and UDP; "" = all
	Port               int            // --port: mesh TCP and sleeve UDP port; default 6783
	Password           string         // --password or $WEAVE_PASSWORD; "" = no encryption
	PasswordSetEmpty   bool           // --password '' given: encryption off on purpose or by mistake; warned about
	ConnLimit          int            // --conn-limit: max connections; 0 = unlimited; default 200
	TrustedSubnets     []netip.Prefix // --trusted-subnets: peers in these talk unencrypted (fastdp)
	NoDiscovery        bool           // --no-discovery: do not connect to peers learned via gossip
	MinProtocolVersion int            // --min-protocol-version: 1..2; default 1
	Resume             bool           // --resume: connect to the persisted targets; forbids Peers
	Peers              []string       // positional args: initial peers host[:port]
	HTTPAddr           string         // --http-addr: full API; "/path" = unix socket; default 127.0.0.1:6784
	StatusAddr         string         // --status-addr: read-only API; "" = off
	PProf              bool           // --pprof: /debug/pprof/ on the full API
	MetricsAddr        string         // --metrics-addr: /metrics (and the read-only API); "" = off
	NoMasqLocal        bool           // --no-masq-local: traffic to this peer's own ranges is not masqueraded (runNoMasqLocal)
	Bridge             string         // --weave-bridge: default "weave"
	MTU                int            // --mtu: bridge MTU; 0 = underlay MTU - 50 (fast path; - 70 over an IPv6 underlay) or 65535 (--no-fastdp)
	LogLevel           string         // --log-level: debug, info, warning, error; default info
	PktDebug           bool           // --pkt-debug: per-frame debug logs
	// SleeveFraming (--sleeve-framing) is what sleeve offers our own
	// routers for frames bigger than the path MTU: "segments" (default:
	// UDP GSO/GRO segments, falling back to jumbo), "jumbo" (one IP-
	// fragmented datagram) or "weave" (path-MTU frames only, as 2.8.1).
	SleeveFraming string
	// BusyPoll (--busy-poll) is how long the capture and sleeve receive
	// loops poll after a frame that followed a pause (router.Config.BusyPoll);
	// 0 turns it off.
	BusyPoll time.Duration
	DataDir  string // --data-dir: default $WEAVE_DATA_DIR or /var/lib/weave
	RunDir   string // --run-dir: default $WEAVE_RUN_DIR or /run/weave
	// Upgrading in place from Weave Net 2.8.1 (daemon/adopt.go).
	DBPrefix  string // --db-prefix: 2.8.1's data file is <prefix>data.db, adopted when ours is absent; default <data-dir>/weave-net
	HostRoot  string // --host-root: machine-id and system UUID for 2.8.1's peer name are read under it; default $WEAVE_HOST_ROOT or /
	ExpectNPC bool   // --expect-npc: drop new bridged connections weave-npc did not mark (netdev.EnsureNPCGuard)

	IPAllocRange         string // --ipalloc-range: default 10.32.0.0/12; "" = IPAM off
	IPAllocInit          string // --ipalloc-init: consensus[=N] (default, N = targets+1), seed=PEER,..., observer
	IPAllocDefaultSubnet string // --ipalloc-default-subnet: default the whole range
	// IPAllocConsensusTimeout (--ipalloc-consensus-timeout) bounds how long an
	// allocation waits for the ring to be created; 0 = 60 s.
	IPAllocConsensusTimeout time.Duration

	// weaveDNS (dns package); zero values take 2.8.1's defaults.
	NoDNS              bool          // --no-dns: no nameserver, no DNS server (gossip is still relayed)
	DNSDomain          string        // --dns-domain: default weave.local.
	DNSListenAddress   string        // --dns-listen-address: default <docker bridge IP>:53, else 127.0.0.1:53
	DNSTTL             int           // --dns-ttl: answer TTL in seconds; default 1
	DNSFallbackTimeout time.Duration // --dns-fallback-timeout: per upstream query; default 5s
	ResolvConf         string        // --resolv-conf: upstream servers; "" = no upstream
	DockerBridge       string        // $DOCKER_BRIDGE: DNS listens on its address by default; default docker0
	// Liveness: memberlist failure detection (docs/liveness.md).
	NoLiveness   bool // --no-liveness: leave dead peers to mesh's timeouts
	LivenessPort int  // --liveness-port: UDP+TCP port; default 6785
	// IPAllocReclaimAfter (--ipalloc-reclaim-after): reclaim the IPAM space
	// of a peer dead this long; 0 (default) = never automatically.
	IPAllocReclaimAfter time.Duration

	// Accepted for compatibility with Weave's flags; not implemented yet.
	NoFastDP        bool   // --no-fastdp: sleeve only (see fastdp)
	NoBridgedFastDP bool   // --no-bridged-fastdp
	Datapath        string // --datapath

	// Docker API proxy (plugin/proxy, docs/docker.md).
	Proxy    bool        // --proxy: serve the Docker API proxy (weave launch turns it on)
	NoProxy  bool        // --no-proxy: overrides --proxy
	ProxyCfg ProxyConfig // -H, --tls*, --hostname-*, ... (proxy.go)

	// Docker network and IPAM plugin (plugin/docker, docs/docker.md).
	Plugin           bool   // --plugin: serve the plugin sockets and create the Docker network "weave"
	NoPlugin         bool   // --no-plugin: overrides --plugin
	PluginSocket     string // --plugin-socket: default /run/docker/plugins/weave.sock
	PluginMeshSocket string // --plugin-mesh-socket: default /run/docker/plugins/weavemesh.sock
	PluginV2         bool   // --plugin-v2: a v2 managed plugin for a swarm: --plugin-socket alone, global scope + IPAM
	DockerAPI        string // --docker-api: default $DOCKER_HOST or unix:///var/run/docker.sock; "" = no Docker calls
}

// PluginEnabled reports whether the Docker plugin is to be served.
func (c *Config) PluginEnabled() bool { return (c.Plugin || c.PluginV2) && !c.NoPlugin }

// DefaultConfig returns the defaults; getenv supplies WEAVE_PASSWORD,
// WEAVE_DATA_DIR and WEAVE_RUN_DIR (pass os.Getenv, or nil for none).
func DefaultConfig(getenv func(string) string) Config {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	nick, err := os.Hostname()
	if err != nil {
		nick = "weave"
	}
	return Config{
		NickName:           nick,
		Port:               DefaultPort,
		Password:           getenv("WEAVE_PASSWORD"),
		ConnLimit:          DefaultConnLimit,
		MinProtocolVersion: 1,
		HTTPAddr:           DefaultHTTPAddr,
		Bridge:             DefaultBridge,
		LogLevel:           "info",
		DataDir:            orDefault(getenv("WEAVE_DATA_DIR"), DefaultDataDir),
		RunDir:             orDefault(getenv("WEAVE_RUN_DIR"), DefaultRunDir),
		HostRoot:           getenv("WEAVE_HOST_ROOT"),
		IPAllocRange:       DefaultIPAllocRange,
		DockerBridge:       orDefault(getenv("DOCKER_BRIDGE"), DefaultDockerBridge),
		LivenessPort:       liveness.DefaultPort,
		PluginSocket:       docker.DefaultNetSocket,
		PluginMeshSocket:   docker.DefaultMeshSocket,
		DockerAPI:          orDefault(getenv("DOCKER_HOST"), DefaultDockerAPI),
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Validate checks the configuration; each error is one line naming the
// flag and the bad value.
func (c *Config) Validate() error {
	checks := []func() error{
		c.validateIdentity, c.validateNet, c.validatePeers,
		c.validateAddrs, c.validateLocal, c.validateIPAM, c.validateDNS, c.validateLiveness, c.validatePlugin, c.validateProxy,
	}
	var errs []error
	for _, check := range checks {
		if err := check(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Config) validateIdentity() error {
	if c.Name != "" {
		if _, err := wmesh.PeerNameFromString(c.Name); err != nil {
			return fmt.Errorf("--name: invalid peer name %q (want a MAC address like aa:00:00:00:00:01)", c.Name)
		}
	}
	if c.NickName == "" {
		return errors.New("--nickname: must not be empty")
	}
	return nil
}

func (c *Config) validateNet() error {
	switch {
	case c.Port < 1 || c.Port > 65534:
		return fmt.Errorf("--port: invalid value %d (want 1..65534; fastdp uses port+1)", c.Port)
	case c.ConnLimit < 0:
		return fmt.Errorf("--conn-limit: invalid value %d (want >= 0; 0 = unlimited)", c.ConnLimit)
	case c.MinProtocolVersion < 1 || c.MinProtocolVersion > 2:
		return fmt.Errorf("--min-protocol-version: invalid value %d (want 1 or 2)", c.MinProtocolVersion)
	case c.MTU != 0 && (c.MTU < 576 || c.MTU > 65535):
		return fmt.Errorf("--mtu: invalid value %d (want 0 or 576..65535)", c.MTU)
	case c.Host != "" && net.ParseIP(c.Host) == nil:
		return fmt.Errorf("--host: invalid IP address %q", c.Host)
	case c.BusyPoll < 0 || c.BusyPoll > 10*time.Millisecond:
		return fmt.Errorf("--busy-poll: invalid value %s (want 0 to 10ms; 0 = off)", c.BusyPoll)
	case c.SleeveFraming != "" && c.SleeveFraming != "segments" && c.SleeveFraming != "jumbo" && c.SleeveFraming != "weave":
		return fmt.Errorf("--sleeve-framing: invalid value %q (want segments, jumbo or weave)", c.SleeveFraming)
	}
	return nil
}

func (c *Config) validatePeers() error {
	if c.Resume && len(c.Peers) > 0 {
		return fmt.Errorf("--resume: cannot be combined with peer arguments %q", strings.Join(c.Peers, " "))
	}
	for _, p := range c.Peers {
		if err := CheckTarget(p); err != nil {
			return fmt.Errorf("peer argument: %w", err)
		}
	}
	return nil
}

func (c *Config) validateAddrs() error {
	if err := validateListenAddr("--http-addr", c.HTTPAddr); err != nil {
		return err
	}
	if err := validateListenAddr("--metrics-addr", c.MetricsAddr); err != nil {
		return err
	}
	return validateListenAddr("--status-addr", c.StatusAddr)
}

func validateListenAddr(flag, addr string) error {
	if addr == "" || strings.HasPrefix(addr, "/") {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%s: invalid address %q (want host:port or /path/to/socket)", flag, addr)
	}
	return nil
}

func (c *Config) validateLocal() error {
	switch {
	case c.Bridge == "" || len(c.Bridge) > 15 || strings.ContainsAny(c.Bridge, "/ "):
		return fmt.Errorf("--weave-bridge: invalid interface name %q", c.Bridge)
	case c.DataDir == "":
		return errors.New("--data-dir: must not be empty")
	case c.RunDir == "":
		return errors.New("--run-dir: must not be empty")
	}
	if _, err := ParseLogLevel(c.LogLevel); err != nil {
		return err
	}
	return nil
}

func (c *Config) validateIPAM() error {
	if c.IPAllocConsensusTimeout < 0 {
		return fmt.Errorf("--ipalloc-consensus-timeout: invalid value %s (want >= 0)", c.IPAllocConsensusTimeout)
	}
	if _, err := ipam.ParseInit(c.IPAllocInit); err != nil {
		return err
	}
	if c.IPAllocRange == "" {
		if c.IPAllocDefaultSubnet != "" {
			return fmt.Errorf("--ipalloc-default-subnet: %q needs --ipalloc-range", c.IPAllocDefaultSubnet)
		}
		return nil
	}
	r, err := netip.ParsePrefix(c.IPAllocRange)
	if err != nil || !r.Addr().Is4() {
		return fmt.Errorf("--ipalloc-range: invalid IPv4 CIDR %q", c.IPAllocRange)
	}
	if c.IPAllocDefaultSubnet == "" {
		return nil
	}
	s, err := netip.ParsePrefix(c.IPAllocDefaultSubnet)
	if err != nil || !s.Addr().Is4() {
		return fmt.Errorf("--ipalloc-default-subnet: invalid IPv4 CIDR %q", c.IPAllocDefaultSubnet)
	}
	if s.Bits() < r.Bits() || !r.Contains(s.Addr()) {
		return fmt.Errorf("--ipalloc-default-subnet: %s is not inside --ipalloc-range %s", s, r)
	}
	return nil
}

// ParseLogLevel maps Weave's --log-level values to slog levels.
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warning", "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level: invalid value %q (want debug, info, warning or error)", s)
}

// BridgeMTU is the MTU for the bridge: --mtu, or 65535 when it is 0.
func (c *Config) BridgeMTU() int {
	if c.MTU == 0 {
		return SleeveBridgeMTU
	}
	return c.MTU
}

// IPAMEnabled reports whether IPAM was requested (--ipalloc-range not "").
func (c *Config) IPAMEnabled() bool { return c.IPAllocRange != "" }

func (c *Config) validateLiveness() error {
	switch {
	case c.LivenessPort < 1 || c.LivenessPort > 65535:
		return fmt.Errorf("--liveness-port: invalid value %d (want 1..65535)", c.LivenessPort)
	case !c.NoLiveness && (c.LivenessPort == c.Port || c.LivenessPort == c.Port+1):
		return fmt.Errorf("--liveness-port: %d collides with --port %d (mesh and sleeve) or its fast path port", c.LivenessPort, c.Port)
	case c.IPAllocReclaimAfter < 0:
		return fmt.Errorf("--ipalloc-reclaim-after: invalid value %s (want >= 0; 0 = off)", c.IPAllocReclaimAfter)
	case c.IPAllocReclaimAfter > 0 && c.NoLiveness:
		return errors.New("--ipalloc-reclaim-after: needs liveness (drop --no-liveness)")
	case c.IPAllocReclaimAfter > 0 && c.IPAllocRange == "":
		return errors.New("--ipalloc-reclaim-after: needs IPAM (--ipalloc-range)")
	}
	return nil
}

func (c *Config) validatePlugin() error {
	if !c.PluginEnabled() {
		return nil
	}
	for _, f := range []struct{ flag, path string }{
		{"--plugin-socket", c.PluginSocket}, {"--plugin-mesh-socket", c.PluginMeshSocket},
	} {
		if !strings.HasPrefix(f.path, "/") {
			return fmt.Errorf("%s: want an absolute socket path, got %q", f.flag, f.path)
		}
	}
	if !c.PluginV2 && c.PluginSocket == c.PluginMeshSocket {
		return fmt.Errorf("--plugin-socket and --plugin-mesh-socket: both are %s; they must differ", c.PluginSocket)
	}
	return nil
}
