package kube

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seedf75a49c6/weave/internal/cli"
	"github.com/seedf75a49c6/weave/internal/iptables"
)

// Defaults of the DaemonSet's knobs, as Weave Net 2.8.1's.
const (
	DefaultIPAllocRange = "10.32.0.0/12"
	DefaultConnLimit    = 200
	DefaultMetricsAddr  = "0.0.0.0:6782"
	DefaultPasswordFile = "/weavepwd/weave-passwd" // where the manifest mounts Secret weave-passwd
	DefaultReclaimDelay = 5 * time.Second
)

// Config is what the agent takes from its environment.
type Config struct {
	NodeName     string           // HOSTNAME (the DaemonSet sets it from spec.nodeName); the router's nickname
	KubePeers    []string         // KUBE_PEERS; nil = every Node's address from the API
	IPAllocRange netip.Prefix     // IPALLOC_RANGE
	IPAllocInit  string           // IPALLOC_INIT; "" = consensus=<number of peers>
	ConnLimit    int              // CONN_LIMIT
	HairpinMode  bool             // HAIRPIN_MODE, for the CNI conflist
	MTU          int              // WEAVE_MTU; 0 = weaver's default
	Password     string           // WEAVE_PASSWORD, else the file WEAVE_PASSWORD_FILE
	NoMasqLocal  bool             // NO_MASQ_LOCAL
	ExpectNPC    bool             // EXPECT_NPC
	ExtraArgs    []string         // EXTRA_ARGS, appended to weaver's flags
	MetricsAddr  string           // WEAVE_METRICS_ADDR
	StatusAddr   string           // WEAVE_STATUS_ADDR
	ExposeIP     string           // WEAVE_EXPOSE_IP: `weave expose` it once the router is up
	NoCheckpoint bool             // CHECKPOINT_DISABLE (we never call home; accepted)
	Backend      iptables.Backend // IPTABLES_BACKEND; Default = detect
	Kubeconfig   string           // KUBECONFIG; "" = in-cluster config
	ReclaimDelay time.Duration    // WEAVE_KUBE_RECLAIM_DELAY: most random wait before a reclaim
	DBPrefix     string           // DB_PREFIX: 2.8.1's data file <prefix>data.db (weaver --db-prefix); "" = <data dir>/weave-net

	Weave cli.Config // WEAVE_* settings shared with `weave launch` and `weave setup-cni`
}

// ConfigFromEnv reads and validates the environment. The error lists every
// bad variable, each named with the value it had.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	p := envParser{getenv: getenv}
	c := Config{
		NodeName:     strings.TrimSpace(getenv("HOSTNAME")),
		KubePeers:    p.peers("KUBE_PEERS"),
		IPAllocRange: p.cidr("IPALLOC_RANGE", DefaultIPAllocRange),
		IPAllocInit:  p.ipallocInit("IPALLOC_INIT"),
		ConnLimit:    p.intIn("CONN_LIMIT", DefaultConnLimit, 0, 1<<20),
		HairpinMode:  p.boolean("HAIRPIN_MODE", true),
		MTU:          p.mtu("WEAVE_MTU"),
		NoMasqLocal:  p.boolean("NO_MASQ_LOCAL", true),
		ExpectNPC:    p.boolean("EXPECT_NPC", true),
		ExtraArgs:    strings.Fields(getenv("EXTRA_ARGS")),
		MetricsAddr:  p.hostPort("WEAVE_METRICS_ADDR", DefaultMetricsAddr),
		StatusAddr:   p.hostPort("WEAVE_STATUS_ADDR", ""),
		ExposeIP:     p.exposeIP("WEAVE_EXPOSE_IP"),
		NoCheckpoint: p.boolean("CHECKPOINT_DISABLE", false),
		Backend:      p.backend(),
		Kubeconfig:   getenv("KUBECONFIG"),
		ReclaimDelay: p.duration("WEAVE_KUBE_RECLAIM_DELAY", DefaultReclaimDelay),
		DBPrefix:     strings.TrimSpace(getenv("DB_PREFIX")),
		Weave:        cli.ConfigFromEnv(getenv),
	}
	c.Password = p.password()
	if c.NodeName == "" {
		p.fail("HOSTNAME is empty: set it to the node name (the DaemonSet does, from spec.nodeName)")
	}
	c.Weave.MTU = "" // WEAVE_MTU is validated here and passed as --mtu
	return c, errors.Join(p.errs...)
}

// envParser reads variables, collecting one error per bad one.
type envParser struct {
	getenv func(string) string
	errs   []error
}

func (p *envParser) fail(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(format, args...))
}

func (p *envParser) get(name, def string) string {
	if v := strings.TrimSpace(p.getenv(name)); v != "" {
		return v
	}
	return def
}

func (p *envParser) boolean(name string, def bool) bool {
	v := p.get(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.fail("%s=%q: want 1 or 0 (true or false)", name, v)
		return def
	}
	return b
}

func (p *envParser) intIn(name string, def, lo, hi int) int {
	v := p.get(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		p.fail("%s=%q: want a whole number from %d to %d", name, v, lo, hi)
		return def
	}
	return n
}

func (p *envParser) mtu(name string) int {
	v := p.get(name, "")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 576 || n > 65535 {
		p.fail("%s=%q: want an MTU from 576 to 65535 (or unset for the default)", name, v)
		return 0
	}
	return n
}

func (p *envParser) duration(name string, def time.Duration) time.Duration {
	v := p.get(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		p.fail("%s=%q: want a duration such as 5s", name, v)
		return def
	}
	return d
}

func (p *envParser) cidr(name, def string) netip.Prefix {
	v := p.get(name, def)
	pfx, err := netip.ParsePrefix(v)
	switch {
	case err != nil || !pfx.Addr().Is4():
		p.fail("%s=%q: want an IPv4 CIDR such as %s", name, v, DefaultIPAllocRange)
	case pfx.Masked() != pfx:
		p.fail("%s=%q: not a network address (did you mean %s?)", name, v, pfx.Masked())
	case pfx.Bits() > 30:
		p.fail("%s=%q: too small for an address range (at most /30)", name, v)
	}
	return pfx
}

func (p *envParser) hostPort(name, def string) string {
	v := p.get(name, def)
	if v == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(v)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
		p.fail("%s=%q: want host:port, such as 0.0.0.0:6782", name, v)
		return def
	}
	if host != "" && net.ParseIP(host) == nil {
		p.fail("%s=%q: the host must be an IP address", name, v)
	}
	return v
}

func (p *envParser) backend() iptables.Backend {
	b, err := iptables.Parse(p.getenv(iptables.EnvVar))
	if err != nil {
		p.errs = append(p.errs, err)
	}
	return b
}

// password is WEAVE_PASSWORD, else the content of WEAVE_PASSWORD_FILE
// (default /weavepwd/weave-passwd, where the manifest mounts the Secret; a
// missing default file means no password), without its trailing newline.
func (p *envParser) password() string {
	if v := p.getenv("WEAVE_PASSWORD"); v != "" {
		return v
	}
	path := p.get("WEAVE_PASSWORD_FILE", "")
	explicit := path != ""
	if !explicit {
		path = DefaultPasswordFile
	}
	b, err := os.ReadFile(path)
	switch {
	case err != nil && !explicit && errors.Is(err, os.ErrNotExist):
		return ""
	case err != nil:
		p.fail("WEAVE_PASSWORD_FILE: read %s: %v", path, err)
		return ""
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if pw == "" {
		p.fail("WEAVE_PASSWORD_FILE: %s is empty: put the password in Secret weave-passwd, or delete the Secret for no encryption", path)
	}
	return pw
}
