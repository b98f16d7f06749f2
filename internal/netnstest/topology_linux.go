package netnstest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// UnderlaySubnet is the /24 the hosts' eth0 addresses come from.
const UnderlaySubnet = "192.168.100"

// UnderlaySubnet6 is the /64 the hosts' IPv6 eth0 addresses come from
// (fd00:100::N) when Config.Underlay gives them IPv6.
const UnderlaySubnet6 = "fd00:100::"

// Underlay families of a host's eth0 (Config.Underlay).
const (
	UnderlayIPv4 = "ipv4" // IPv4 only, IPv6 disabled (the default)
	UnderlayIPv6 = "ipv6" // IPv6 only: no IPv4 address on eth0
	UnderlayDual = "dual" // both
)

// Config configures a Topology.
type Config struct {
	// Hosts is the number of host namespaces; default 2.
	Hosts int
	// Weave is the path of the `weave` script used by StartRouter, Weave and
	// Attach; default: the file "weave" in the module root (found by walking
	// up from the working directory to go.mod). A "bin" directory next to it
	// is put first on PATH for the script.
	Weave string
	// HTTPAddr is WEAVE_HTTP_ADDR for every router; default 127.0.0.1:6784
	// (each host namespace has its own loopback).
	HTTPAddr string
	// Underlay is each host's underlay family (index 0 = h1): UnderlayIPv4
	// (also for "" and hosts past the end), UnderlayIPv6 or UnderlayDual.
	Underlay []string
}

func (c Config) withDefaults() Config {
	if c.Hosts == 0 {
		c.Hosts = 2
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = "127.0.0.1:6784"
	}
	if c.Weave == "" {
		if root, err := ModuleRoot(); err == nil {
			c.Weave = filepath.Join(root, "weave")
		}
	}
	return c
}

// Host is one simulated machine: a network namespace with eth0 on the
// underlay and its own weave run and data directories.
type Host struct {
	Index   int    // 1-based
	Name    string // logical name, "h1"
	NS      string // namespace name
	IP      string // underlay address without prefix length, 192.168.100.N; "" when IPv6 only
	IP6     string // IPv6 underlay address, fd00:100::N; "" unless Config.Underlay gives IPv6
	RunDir  string // WEAVE_RUN_DIR
	DataDir string // WEAVE_DATA_DIR
	// HostRoot (WEAVE_HOST_ROOT) holds the host's own etc/machine-id
	// (random): the peer name a router derives without --name differs
	// from host to host, as on real machines.
	HostRoot string
}

// Container is a namespace attached to a host's weave bridge.
type Container struct {
	Name string // logical name, "c1"
	NS   string // namespace name
	CIDR string // address given to `weave attach`, 10.2.1.1/24
	Host *Host
}

// IP returns the container address without the prefix length.
func (c *Container) IP() string { ip, _, _ := strings.Cut(c.CIDR, "/"); return ip }

// Topology is an underlay bridge plus host and container namespaces, all
// removed when the test ends.
type Topology struct {
	t        testing.TB
	cfg      Config
	Prefix   string // "w" + 5 hex digits, unique per topology
	Underlay string // underlay namespace name (bridge br0)
	hosts    []*Host

	mu         sync.Mutex
	namespaces []string // every namespace created, in creation order
	containers []*Container
	procs      []*Proc
	cuts       map[[2]int]bool
}

var sweepOnce sync.Once

// New builds the underlay and cfg.Hosts hosts, registering cleanup with
// t. It calls RequireRoot first and, once per process, sweeps namespaces
// left behind by dead test processes.
func New(t testing.TB, cfg Config) *Topology {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, "ip", "iptables")
	sweepOnce.Do(func() {
		if err := Sweep(); err != nil {
			t.Logf("netnstest: sweep: %v", err)
		}
	})
	cfg = cfg.withDefaults()
	tp := &Topology{t: t, cfg: cfg, Prefix: newPrefix(), cuts: map[[2]int]bool{}}
	base := t.TempDir()
	t.Cleanup(tp.cleanup)
	tp.Underlay = tp.nsName("ul")
	tp.addNS(tp.Underlay)
	tp.mustRun(tp.Underlay, "ip", "link", "add", "br0", "type", "bridge")
	tp.mustRun(tp.Underlay, "ip", "link", "set", "br0", "up")
	for i := 1; i <= cfg.Hosts; i++ {
		tp.hosts = append(tp.hosts, tp.addHost(i, base))
	}
	return tp
}

func newPrefix() string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("read random prefix: %v", err))
	}
	return "w" + hex.EncodeToString(b[:])[:5]
}

// nsName embeds the prefix and the creator PID (for the sweeper).
func (tp *Topology) nsName(role string) string { return nsName(tp.Prefix, role) }

func nsName(prefix, role string) string {
	return fmt.Sprintf("%s-%d-%s", prefix, os.Getpid(), role)
}

func (tp *Topology) addNS(ns string) {
	tp.t.Helper()
	if out, err := run("ip", "netns", "add", ns); err != nil {
		tp.t.Fatalf("add namespace %s: %v: %s", ns, err, out)
	}
	tp.mu.Lock()
	tp.namespaces = append(tp.namespaces, ns)
	tp.mu.Unlock()
	tp.mustRun(ns, "ip", "link", "set", "lo", "up")
	// No IPv6: keeps captures free of router solicitations and DAD.
	tp.mustRun(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
}

func (tp *Topology) addHost(i int, base string) *Host {
	tp.t.Helper()
	h := &Host{Index: i, Name: fmt.Sprintf("h%d", i), IP: fmt.Sprintf("%s.%d", UnderlaySubnet, i)}
	h.NS = tp.nsName(h.Name)
	h.RunDir = filepath.Join(base, h.Name, "run")
	h.DataDir = filepath.Join(base, h.Name, "data")
	h.HostRoot = filepath.Join(base, h.Name, "root")
	for _, d := range []string{h.RunDir, h.DataDir, filepath.Join(h.HostRoot, "etc")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tp.t.Fatalf("create %s: %v", d, err)
		}
	}
	machineID := make([]byte, 16)
	_, _ = rand.Read(machineID)
	if err := os.WriteFile(filepath.Join(h.HostRoot, "etc", "machine-id"), []byte(hex.EncodeToString(machineID)+"\n"), 0o644); err != nil {
		tp.t.Fatalf("write machine-id of %s: %v", h.Name, err)
	}
	tp.addNS(h.NS)
	family := UnderlayIPv4
	if i <= len(tp.cfg.Underlay) && tp.cfg.Underlay[i-1] != "" {
		family = tp.cfg.Underlay[i-1]
	}
	switch family {
	case UnderlayIPv4:
	case UnderlayIPv6, UnderlayDual:
		h.IP6 = fmt.Sprintf("%s%d", UnderlaySubnet6, i)
		if family == UnderlayIPv6 {
			h.IP = ""
		}
		tp.mustRun(h.NS, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.disable_ipv6=0")
	default:
		tp.t.Fatalf("netnstest: host %s: unknown underlay family %q", h.Name, family)
	}
	ul := fmt.Sprintf("v%s", h.Name) // underlay side, inside the underlay namespace
	tp.mustRunRoot("ip", "link", "add", ul, "netns", tp.Underlay, "type", "veth", "peer", "name", "eth0", "netns", h.NS)
	tp.mustRun(tp.Underlay, "ip", "link", "set", ul, "master", "br0")
	tp.mustRun(tp.Underlay, "ip", "link", "set", ul, "up")
	if h.IP != "" {
		tp.mustRun(h.NS, "ip", "addr", "add", h.IP+"/24", "dev", "eth0")
	}
	if h.IP6 != "" { // nodad: usable at once
		tp.mustRun(h.NS, "ip", "addr", "add", h.IP6+"/64", "dev", "eth0", "nodad")
	}
	tp.mustRun(h.NS, "ip", "link", "set", "eth0", "up")
	return h
}

// Host returns host i (1-based).
func (tp *Topology) Host(i int) *Host { return tp.hosts[i-1] }

// Hosts returns all hosts in index order.
func (tp *Topology) Hosts() []*Host { return tp.hosts }

// NewContainer creates an empty container namespace for host h, without
// attaching it (see Attach).
func (tp *Topology) NewContainer(h *Host, name, cidr string) *Container {
	tp.t.Helper()
	c := &Container{Name: name, NS: tp.nsName(name), CIDR: cidr, Host: h}
	tp.addNS(c.NS)
	tp.mu.Lock()
	tp.containers = append(tp.containers, c)
	tp.mu.Unlock()
	return c
}

// AddContainer creates a container namespace and runs `weave attach CIDR
// /var/run/netns/NS` on its host, failing t on error.
func (tp *Topology) AddContainer(h *Host, name, cidr string) *Container {
	tp.t.Helper()
	c := tp.NewContainer(h, name, cidr)
	if out, err := tp.Weave(h, "attach", cidr, NSPath(c.NS)); err != nil {
		tp.t.Fatalf("weave attach %s %s on %s: %v\n%s", cidr, c.NS, h.Name, err, out)
	}
	return c
}

// NSPath is the bind-mount path of a named namespace.
func NSPath(ns string) string { return filepath.Join("/var/run/netns", ns) }

func (tp *Topology) mustRun(ns string, args ...string) {
	tp.t.Helper()
	if err := Exec(ns, args...); err != nil {
		tp.t.Fatal(err)
	}
}

func (tp *Topology) mustRunRoot(args ...string) {
	tp.t.Helper()
	if out, err := run(args[0], args[1:]...); err != nil {
		tp.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// SetHosts gives host h its own /etc/hosts: `ip netns exec` (which runs
// every command here) bind-mounts /etc/netns/<ns>/hosts over /etc/hosts.
// The directory is removed when the test ends, and /etc/netns too when
// this made it and it is empty again.
func (tp *Topology) SetHosts(h *Host, content string) {
	tp.t.Helper()
	dir := filepath.Join("/etc/netns", h.NS)
	_, err := os.Stat("/etc/netns")
	made := os.IsNotExist(err)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tp.t.Fatalf("create %s: %v", dir, err)
	}
	tp.t.Cleanup(func() {
		os.RemoveAll(dir)
		if made {
			os.Remove("/etc/netns") // fails, as it should, while another test's hosts file is there
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte(content), 0o644); err != nil {
		tp.t.Fatalf("write %s/hosts: %v", dir, err)
	}
}

// Namespaces creates one network namespace per role, named as New names
// them (prefix, creator PID, role: Sweep removes them after a killed
// run), with lo up, and deletes them (killing what runs inside) at
// cleanup. It returns the random prefix too, for short device names.
// It sweeps once per process, as New does.
func Namespaces(t testing.TB, roles ...string) (prefix string, names []string) {
	t.Helper()
	RequireRoot(t)
	sweepOnce.Do(func() {
		if err := Sweep(); err != nil {
			t.Logf("netnstest: sweep: %v", err)
		}
	})
	prefix = newPrefix()
	for _, role := range roles {
		ns := nsName(prefix, role)
		if out, err := run("ip", "netns", "add", ns); err != nil {
			t.Fatalf("add namespace %s: %v: %s", ns, err, out)
		}
		t.Cleanup(func() {
			if err := deleteNS(ns); err != nil {
				t.Errorf("netnstest: %v", err)
			}
		})
		if out, err := run("ip", "-n", ns, "link", "set", "lo", "up"); err != nil {
			t.Fatalf("lo up in %s: %v: %s", ns, err, out)
		}
		names = append(names, ns)
	}
	return prefix, names
}
