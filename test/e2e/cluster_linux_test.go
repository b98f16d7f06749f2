package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// Timeouts for polled router state.
const (
	establishTimeout = 30 * time.Second
	pingTimeout      = 20 * time.Second
)

// clusterOpts describes a test cluster.
type clusterOpts struct {
	hosts     int
	hub       int      // every other host dials this one; default 1
	password  string   // for every router, unless passwords is set
	passwords []string // per host (index 0 = h1)
	cut       [][2]int // underlay links to cut before launching
	noLaunch  []int    // hosts whose router the test launches itself
	fastdp    bool     // keep the VXLAN fast path (launch without --no-fastdp)
	expectNPC bool     // launch with --expect-npc (bridge closed until weave-npc allows)
	extra     []string // more launch arguments for every router
	underlay  []string // per host underlay family (netnstest.Config.Underlay); default IPv4
}

// cluster is a topology with one router and one container per host.
type cluster struct {
	t    *testing.T
	tp   *netnstest.Topology
	opts clusterOpts
	c    []*netnstest.Container // c[i] is on host i+1
}

// newCluster builds hosts, cuts links, launches routers (hub first) and
// attaches container cN (10.2.1.N/24) on every host.
func newCluster(t *testing.T, opts clusterOpts) *cluster {
	t.Helper()
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip", "iptables", "ping")
	if opts.fastdp {
		netnstest.RequireTools(t, "bridge")
	}
	if build.err != nil {
		t.Fatalf("TestMain could not build the product: %v", build.err)
	}
	if opts.hub == 0 {
		opts.hub = 1
	}
	cl := &cluster{t: t, opts: opts}
	cl.tp = netnstest.New(t, netnstest.Config{Hosts: opts.hosts, Weave: build.weave, Underlay: opts.underlay})
	for _, c := range opts.cut {
		cl.tp.CutLink(cl.host(c[0]), cl.host(c[1]))
	}
	order := []int{opts.hub}
	for i := 1; i <= opts.hosts; i++ {
		if i != opts.hub {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if !contains(opts.noLaunch, i) {
			cl.launch(i)
		}
	}
	for i := 1; i <= opts.hosts; i++ {
		if !contains(opts.noLaunch, i) {
			cl.attach(i)
		}
	}
	return cl
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func (cl *cluster) host(i int) *netnstest.Host { return cl.tp.Host(i) }

// container returns cN once attached.
func (cl *cluster) container(i int) *netnstest.Container { return cl.c[i-1] }

// peerName is the fixed peer name of host i.
func peerName(i int) string { return fmt.Sprintf("aa:00:00:00:00:%02x", i) }

// launchArgs are the `weave launch` arguments for host i.
func (cl *cluster) launchArgs(i int) []string {
	args := []string{"--name", peerName(i), "--nickname", fmt.Sprintf("h%d", i), "--ipalloc-range", ""}
	if !cl.opts.fastdp {
		args = append(args, "--no-fastdp")
	}
	pw := cl.opts.password
	if len(cl.opts.passwords) >= i {
		pw = cl.opts.passwords[i-1]
	}
	if pw != "" {
		args = append(args, "--password", pw)
	}
	if cl.opts.expectNPC {
		args = append(args, "--expect-npc")
	}
	args = append(args, cl.opts.extra...)
	if i != cl.opts.hub {
		args = append(args, cl.peerAddr(i, cl.opts.hub))
	}
	return args
}

// peerAddr is how host i names host j as a peer: j's IPv4 underlay
// address when both have IPv4, else j's IPv6 one as [v6].
func (cl *cluster) peerAddr(i, j int) string {
	if cl.host(i).IP != "" && cl.host(j).IP != "" {
		return cl.host(j).IP
	}
	return "[" + cl.host(j).IP6 + "]"
}

// launch starts host i's router and checks the printed peer name.
func (cl *cluster) launch(i int) {
	cl.t.Helper()
	name, err := cl.tp.StartRouter(cl.host(i), cl.launchArgs(i)...)
	if err != nil {
		cl.t.Fatal(err)
	}
	if name != peerName(i) {
		cl.t.Fatalf("weave launch on h%d printed peer name %q, want %q", i, name, peerName(i))
	}
}

// attach creates container cN on host i with `weave attach`.
func (cl *cluster) attach(i int) {
	cl.t.Helper()
	for len(cl.c) < i {
		cl.c = append(cl.c, nil)
	}
	cl.c[i-1] = cl.tp.AddContainer(cl.host(i), fmt.Sprintf("c%d", i), fmt.Sprintf("10.2.1.%d/24", i))
}

// weave runs a weave command on host i, failing the test on error.
func (cl *cluster) weave(i int, args ...string) string {
	cl.t.Helper()
	out, err := cl.tp.Weave(cl.host(i), args...)
	if err != nil {
		cl.t.Fatalf("weave %s on h%d: %v\n%s", strings.Join(args, " "), i, err, out)
	}
	return out
}

// connections returns host i's parsed connections (error if the status
// command fails).
func (cl *cluster) connections(i int) ([]connLine, string, error) {
	out, err := cl.tp.Weave(cl.host(i), "status", "connections")
	return parseConnections(out), out, err
}

// establishedTo reports whether host i has an established connection
// whose address or info mentions peer j (by underlay IP or peer name).
func (cl *cluster) establishedTo(i, j int) (bool, string, error) {
	conns, out, err := cl.connections(i)
	if err != nil {
		return false, out, err
	}
	for _, c := range conns {
		h := cl.host(j)
		atJ := (h.IP != "" && strings.HasPrefix(c.Addr, h.IP+":")) || (h.IP6 != "" && strings.HasPrefix(c.Addr, "["+h.IP6+"]:"))
		if c.State == "established" && (atJ || strings.Contains(c.Info, peerName(j))) {
			return true, out, nil
		}
	}
	return false, out, nil
}

// waitEstablished waits until host i shows an established connection to j.
func (cl *cluster) waitEstablished(i, j int) {
	cl.t.Helper()
	netnstest.WaitFor(cl.t, establishTimeout, fmt.Sprintf("h%d established to h%d", i, j), func() error {
		ok, out, err := cl.establishedTo(i, j)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("`weave status connections` on h%d:\n%s", i, out)
		}
		return nil
	})
}

// waitPing waits until cI can ping cJ once (ARP and routes settle), then
// requires five more pings to all be answered.
func (cl *cluster) waitPing(i, j int) {
	cl.t.Helper()
	from, to := cl.container(i), cl.container(j)
	netnstest.WaitFor(cl.t, pingTimeout, fmt.Sprintf("first ping c%d -> c%d", i, j), func() error {
		out, err := netnstest.Output(from.NS, "ping", "-n", "-c", "1", "-W", "1", to.IP())
		if err != nil {
			return fmt.Errorf("%w\n%s", err, out)
		}
		return nil
	})
	out, err := netnstest.Ping(from.NS, to.IP(), 5)
	if err != nil || !strings.Contains(out, " 0% packet loss") {
		cl.t.Fatalf("ping c%d -> c%d after warm-up lost packets: %v\n%s", i, j, err, out)
	}
}

// pingFails asserts a single ping cI -> cJ gets no answer.
func (cl *cluster) pingFails(i, j int) {
	cl.t.Helper()
	out, err := netnstest.Output(cl.container(i).NS, "ping", "-n", "-c", "1", "-W", "1", cl.container(j).IP())
	if err == nil {
		cl.t.Fatalf("ping c%d -> c%d succeeded, want failure:\n%s", i, j, out)
	}
}
