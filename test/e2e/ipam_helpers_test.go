//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// takeoverTimeout is "within seconds": the space rmpeer takes over (or
// weave reset hands over) must be usable this quickly. A `weave attach`
// that allocates is bounded by netnstest.CommandTimeout.
const takeoverTimeout = 15 * time.Second

// ipamCluster is a topology whose routers run IPAM; every router lists all
// the other hosts as peers, so the default consensus quorum is a majority.
type ipamCluster struct {
	t      *testing.T
	tp     *netnstest.Topology
	rng    netip.Prefix
	extra  []string // more weaver flags for every host
	hosts  int
	solo   bool // launch without peer arguments
	byName map[string]*netnstest.Container
}

func newIPAMCluster(t *testing.T, hosts int, rng string, extra ...string) *ipamCluster {
	t.Helper()
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip", "iptables", "ping")
	if build.err != nil {
		t.Fatalf("TestMain could not build the product: %v", build.err)
	}
	return &ipamCluster{
		t: t, tp: netnstest.New(t, netnstest.Config{Hosts: hosts, Weave: build.weave}),
		rng: netip.MustParsePrefix(rng), extra: extra, hosts: hosts, byName: map[string]*netnstest.Container{},
	}
}

func (ic *ipamCluster) host(i int) *netnstest.Host { return ic.tp.Host(i) }

// launch starts host i's router with IPAM on.
func (ic *ipamCluster) launch(i int) {
	ic.t.Helper()
	args := []string{"--name", peerName(i), "--nickname", fmt.Sprintf("h%d", i), "--no-fastdp",
		"--ipalloc-range", ic.rng.String()}
	args = append(args, ic.extra...)
	for j := 1; j <= ic.hosts && !ic.solo; j++ {
		if j != i {
			args = append(args, ic.host(j).IP)
		}
	}
	name, err := ic.tp.StartRouter(ic.host(i), args...)
	if err != nil {
		ic.t.Fatal(err)
	}
	if name != peerName(i) {
		ic.t.Fatalf("weave launch on h%d printed %q, want %q", i, name, peerName(i))
	}
}

// weave runs a weave command on host i and fails the test on error.
func (ic *ipamCluster) weave(i int, args ...string) string {
	ic.t.Helper()
	out, err := ic.tp.Weave(ic.host(i), args...)
	if err != nil {
		ic.t.Fatalf("weave %s on h%d: %v\n%s", strings.Join(args, " "), i, err, out)
	}
	return out
}

// attachAuto creates container name on host i and attaches it with no
// address (IPAM allocates in the default subnet); it returns the container
// with its address.
func (ic *ipamCluster) attachAuto(i int, name string) *netnstest.Container {
	ic.t.Helper()
	return ic.attachIn(i, name, ic.rng)
}

// attachIn is attachAuto with `net:<subnet>` (the default subnet when
// subnet is the whole range).
func (ic *ipamCluster) attachIn(i int, name string, subnet netip.Prefix) *netnstest.Container {
	ic.t.Helper()
	c := ic.tp.NewContainer(ic.host(i), name, "")
	args := []string{"attach", netnstest.NSPath(c.NS)}
	if subnet != ic.rng {
		args = []string{"attach", "net:" + subnet.String(), netnstest.NSPath(c.NS)}
	}
	start := time.Now()
	out := ic.weave(i, args...)
	ip, err := netip.ParseAddr(strings.TrimSpace(out))
	if err != nil {
		ic.t.Fatalf("weave %s on h%d printed %q, want one address", strings.Join(args, " "), i, out)
	}
	if !subnet.Contains(ip) {
		ic.t.Fatalf("%s got %s, outside %s", name, ip, subnet)
	}
	ic.t.Logf("%s on h%d: %s (allocated in %v)", name, i, ip, time.Since(start).Round(time.Millisecond))
	c.CIDR = netip.PrefixFrom(ip, subnet.Bits()).String()
	if got := ifaceAddrs(ic.t, c.NS, "ethwe"); len(got) != 1 || got[0] != c.CIDR {
		ic.t.Fatalf("%s: ethwe has %q, want [%s]", name, got, c.CIDR)
	}
	ic.byName[name] = c
	return c
}

// ifaceAddrs lists the IPv4 CIDRs on dev inside namespace ns.
func ifaceAddrs(t *testing.T, ns, dev string) []string {
	t.Helper()
	out, err := netnstest.Output(ns, "ip", "-4", "-o", "addr", "show", "dev", dev)
	if err != nil {
		t.Fatalf("read addresses of %s in %s: %v", dev, ns, err)
	}
	var addrs []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for k := 0; k+1 < len(f); k++ {
			if f[k] == "inet" {
				addrs = append(addrs, f[k+1])
			}
		}
	}
	return addrs
}

// waitPingIP waits until ns can ping ip once, then requires three more
// answered pings.
func waitPingIP(t *testing.T, ns, what, ip string) {
	t.Helper()
	netnstest.WaitFor(t, pingTimeout, "first ping "+what, func() error {
		out, err := netnstest.Output(ns, "ping", "-n", "-c", "1", "-W", "1", ip)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, out)
		}
		return nil
	})
	if out, err := netnstest.Ping(ns, ip, 3); err != nil || !strings.Contains(out, " 0% packet loss") {
		t.Fatalf("ping %s lost packets after warm-up: %v\n%s", what, err, out)
	}
}

// routerGET performs GET path on host i's router API (127.0.0.1:6784 in
// its namespace). The socket is created inside the namespace and used
// from here; HTTP/1.0 keeps the exchange to one read.
func (ic *ipamCluster) routerGET(i int, path string) (int, string, error) {
	var conn net.Conn
	err := netns.Do(netnstest.NSPath(ic.host(i).NS), func() error {
		var err error
		conn, err = net.DialTimeout("tcp", "127.0.0.1:6784", 3*time.Second)
		return err
	})
	if err != nil {
		return 0, "", fmt.Errorf("connect to the router API on h%d: %w", i, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: weave\r\nAccept: application/json\r\n\r\n", path); err != nil {
		return 0, "", fmt.Errorf("send GET %s to h%d: %w", path, i, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", fmt.Errorf("read answer to GET %s from h%d: %w", path, i, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(body)), err
}

// routerPID reads host i's weaver pid file.
func (ic *ipamCluster) routerPID(i int) int {
	ic.t.Helper()
	b, err := os.ReadFile(filepath.Join(ic.host(i).RunDir, "weaver.pid"))
	if err != nil {
		ic.t.Fatalf("read weaver pid of h%d: %v", i, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		ic.t.Fatalf("weaver pid file of h%d holds %q", i, b)
	}
	return pid
}

// kill9 SIGKILLs host i's weaver and waits until it is gone (a zombie
// counts as gone: it no longer holds sockets or the database lock).
func (ic *ipamCluster) kill9(i int) {
	ic.t.Helper()
	pid := ic.routerPID(i)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		ic.t.Fatalf("kill -9 weaver %d on h%d: %v", pid, i, err)
	}
	netnstest.WaitFor(ic.t, 10*time.Second, fmt.Sprintf("weaver %d on h%d to die", pid, i), func() error {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil
		}
		if _, rest, _ := strings.Cut(string(b), ") "); strings.HasPrefix(rest, "Z") {
			return nil
		}
		return fmt.Errorf("pid %d still running", pid)
	})
}

// ipamShare is one line of `weave status ipam`.
type ipamShare struct {
	peer        string // peer name
	ips         int
	active      int  // -1 unless it is the local line
	unreachable bool // "- unreachable!"
}

// parseIPAMStatus parses the peer lines of `weave status ipam`:
// "%-37v %8d IPs (%04.1f%% of total) <info>".
func parseIPAMStatus(out string) []ipamShare {
	var shares []ipamShare
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[2] != "IPs" {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		s := ipamShare{peer: strings.SplitN(f[0], "(", 2)[0], ips: n, active: -1,
			unreachable: strings.Contains(line, "unreachable!")}
		if i := strings.Index(line, ") ("); i >= 0 {
			_, _ = fmt.Sscanf(line[i+3:], "%d active)", &s.active)
		}
		shares = append(shares, s)
	}
	return shares
}

func shareOf(shares []ipamShare, peer string) (ipamShare, bool) {
	for _, s := range shares {
		if s.peer == peer {
			return s, true
		}
	}
	return ipamShare{}, false
}
