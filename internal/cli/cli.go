package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/seedf75a49c6/weave/internal/api"
)

// Config is everything the CLI needs from its environment. ConfigFromEnv
// fills it from WEAVE_* variables; zero fields take the documented default.
type Config struct {
	DataDir  string // WEAVE_DATA_DIR, default /var/lib/weave
	RunDir   string // WEAVE_RUN_DIR, default /run/weave (weaver.pid, weaver.log, attached/)
	HTTPAddr string // WEAVE_HTTP_ADDR, default 127.0.0.1:6784
	// StatusAddr is WEAVE_STATUS_ADDR, passed as --status-addr (the
	// read-only API and status page) when set; default off.
	StatusAddr string
	Bridge     string // WEAVE_BRIDGE, default "weave"

	// Passed to weaver by launch when set and not given as flags.
	Port     string // WEAVE_PORT -> --port
	MTU      string // WEAVE_MTU -> --mtu
	NoFastDP bool   // WEAVE_NO_FASTDP -> --no-fastdp
	Debug    bool   // WEAVE_DEBUG -> --log-level=debug, and debug logs here

	DockerSocket string // from DOCKER_HOST=unix://..., default /var/run/docker.sock
	// OrigDockerHost is DOCKER_HOST (weave env keeps it in ORIG_DOCKER_HOST),
	// RestoreDockerHost is ORIG_DOCKER_HOST (weave env --restore).
	OrigDockerHost, RestoreDockerHost string
	DockerBridge                      string // DOCKER_BRIDGE, default docker0
	// DockerPIDFile is dockerd's pid file (default /var/run/docker.pid):
	// launch turns the plugin on only in dockerd's network namespace.
	DockerPIDFile string
	NetnsDir      string // default /var/run/netns
	ProcDir       string // default /proc

	WeaverPath string // explicit weaver binary; "" = search (see findBinary)
	BinDir     string // WEAVE_BIN_DIR, searched after the directory of this executable

	LaunchTimeout time.Duration // wait for GET /status 200, default 30 s
	StopTimeout   time.Duration // SIGTERM grace before SIGKILL, default 10 s
	PollInterval  time.Duration // launch/stop polling, default 100 ms

	Stdout, Stderr io.Writer    // default os.Stdout / os.Stderr
	Logger         *slog.Logger // default: text to Stderr, debug level iff Debug
	Kernel         Kernel       // kernel plumbing; nil makes kernel verbs fail with errNoKernel
}

// ConfigFromEnv reads the WEAVE_* environment through getenv.
func ConfigFromEnv(getenv func(string) string) Config {
	c := Config{
		DataDir:  getenv("WEAVE_DATA_DIR"),
		RunDir:   getenv("WEAVE_RUN_DIR"),
		HTTPAddr: getenv("WEAVE_HTTP_ADDR"),
		// 2.8.1's script name; unlike 2.8.1, no default.
		StatusAddr: getenv("WEAVE_STATUS_ADDR"),
		Bridge:     getenv("WEAVE_BRIDGE"),
		Port:       getenv("WEAVE_PORT"),
		MTU:        getenv("WEAVE_MTU"),
		NoFastDP:   getenv("WEAVE_NO_FASTDP") != "",
		Debug:      getenv("WEAVE_DEBUG") != "",
		BinDir:     getenv("WEAVE_BIN_DIR"),

		OrigDockerHost: getenv("DOCKER_HOST"), RestoreDockerHost: getenv("ORIG_DOCKER_HOST"),
		DockerBridge: getenv("DOCKER_BRIDGE"),
	}
	if h := getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		c.DockerSocket = strings.TrimPrefix(h, "unix://")
	}
	return c
}

func (c Config) withDefaults() Config {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.DataDir, "/var/lib/weave")
	def(&c.RunDir, "/run/weave")
	def(&c.HTTPAddr, api.DefaultAddr)
	def(&c.Bridge, "weave")
	def(&c.DockerSocket, "/var/run/docker.sock")
	def(&c.DockerPIDFile, "/var/run/docker.pid")
	def(&c.DockerBridge, "docker0")
	def(&c.NetnsDir, "/var/run/netns")
	def(&c.ProcDir, "/proc")
	if c.LaunchTimeout == 0 {
		c.LaunchTimeout = 30 * time.Second
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 10 * time.Second
	}
	if c.PollInterval == 0 {
		c.PollInterval = 100 * time.Millisecond
	}
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	if c.Logger == nil {
		lvl := slog.LevelWarn
		if c.Debug {
			lvl = slog.LevelDebug
		}
		c.Logger = slog.New(slog.NewTextHandler(c.Stderr, &slog.HandlerOptions{Level: lvl}))
	}
	if c.Kernel == nil {
		c.Kernel = noKernel{}
	}
	return c
}

// Exit codes, as Weave's script used them.
const (
	ExitOK       = 0
	ExitError    = 1
	ExitNotFound = 4 // the router answered 404
)

// usageError is a bad command line; Run prints the usage hint after it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// cmd is one invocation: the resolved config plus the router client.
type cmd struct {
	Config
	api *api.Client
}

type verb func(ctx context.Context, c *cmd, args []string) error

var verbs map[string]verb

func init() {
	verbs = map[string]verb{
		"launch": runLaunch, "stop": runStop, "reset": runReset,
		"connect": runConnect, "forget": runForget,
		"attach": runAttach, "detach": runDetach, "ps": runPS,
		"status": runStatus, "report": runReport, "version": runVersion,
		"expose": runExpose, "hide": runHide, "rmpeer": runRmpeer, "setup-cni": runSetupCNI,
	}
	for v, f := range map[string]verb{
		"env": runEnv, "config": runConfig, "prime": runPrime,
		"bridge-type": runBridgeType, "docker-bridge-ip": runDockerBridgeIP, "attach-bridge": runAttachBridge,
		"dns-add": runDNSAdd, "dns-remove": runDNSRemove, "dns-lookup": runDNSLookup, "dns-args": runDNSArgs,
	} {
		verbs[v] = f
	}
}

// Run executes one `weave` command line (args without the program name)
// and returns the process exit code. Errors are printed to cfg.Stderr as
// one line.
func Run(ctx context.Context, cfg Config, args []string) int {
	c := &cmd{Config: cfg.withDefaults()}
	c.api = api.NewClient(api.Config{Addr: c.HTTPAddr})
	if len(args) == 0 {
		fmt.Fprint(c.Stderr, usage)
		return ExitError
	}
	switch args[0] {
	case "help", "--help", "-h":
		fmt.Fprint(c.Stdout, usage)
		return ExitOK
	}
	v, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(c.Stderr, "weave: unknown command %q\n%s", args[0], usage)
		return ExitError
	}
	c.Logger.Debug("running", "verb", args[0], "args", args[1:])
	return c.exit(v(ctx, c, args[1:]))
}

// exit prints err and maps it to an exit code.
func (c *cmd) exit(err error) int {
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(c.Stderr, err)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(c.Stderr, "Run 'weave help' for usage.")
	}
	if api.StatusCode(err) == 404 {
		return ExitNotFound
	}
	return ExitError
}

const usage = `Usage:

weave --help | help
      setup-cni     [--cni-bin-dir <dir>] [--cni-conf-dir <dir>] [--hairpin-mode=false] [--force]
      version

weave launch        [--password <pass>] [--port <port>] [--nickname <name>]
                    [--mtu <mtu>] [--no-fastdp] [--conn-limit <n>]
                    [<weaver option> ...] [<peer> ...]
weave stop
weave reset         [--force]

weave connect       [--replace] [<peer> ...]
weave forget        <peer> ...
weave rmpeer        <peer_id> ...

weave attach        [<addr> ...] [--no-multicast-route] [--name <fqdn> | --without-dns]
                    [--rewrite-hosts] [--add-host <host>:<ip> ...] <target>
weave detach        [<addr> ...] <target>
weave ps            [<target> ...]
weave expose        [<addr> ...] [--without-masquerade]
weave hide          [<cidr> ...]

weave env           [--restore]
weave config
weave prime
weave attach-bridge [<bridge>]
weave bridge-type
weave docker-bridge-ip

weave dns-add       [<ip_address> ...] [<target>] [-h <fqdn>]
weave dns-remove    [<ip_address> ...] [<target>] [-h <fqdn>]
weave dns-lookup    <name>
weave dns-args

weave status        [targets | connections | peers | dns | ipam]
weave report        [-f <format>]

where <peer>   = <ip_address_or_fqdn>[:<port>]
      <addr>   = [ip:]<cidr> | net:<cidr> | net:default
      <cidr>   = <ip_address>/<routing_prefix_length>
      <target> = <netns name in /var/run/netns> | <netns path> | <pid> | <docker container name or id>

Environment: WEAVE_DATA_DIR (/var/lib/weave), WEAVE_RUN_DIR (/run/weave),
WEAVE_HTTP_ADDR (127.0.0.1:6784), WEAVE_PASSWORD, WEAVE_PORT, WEAVE_MTU,
WEAVE_NO_FASTDP, WEAVE_DEBUG, WEAVE_BIN_DIR, WEAVE_STATUS_ADDR (off; e.g.
127.0.0.1:6782: the read-only API and the status page).
`
