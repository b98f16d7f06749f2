//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestIPAMLifecycle runs one three-host IPAM cluster through its life:
// consensus and distinct allocations, weave expose, a router killed with
// SIGKILL and relaunched, and rmpeer of a router that is gone for good.
func TestIPAMLifecycle(t *testing.T) {
	t.Parallel()
	ic := newIPAMCluster(t, 3, "10.40.0.0/22")
	for i := 1; i <= 3; i++ {
		ic.launch(i)
	}
	// One test goroutine throughout: the topology fails the test it was
	// built for, so the phases are not subtests.
	phases := []struct {
		name string
		run  func(*testing.T)
	}{
		{"(a) consensus and distinct addresses", ic.checkConsensus},
		{"(e) expose", ic.checkExpose},
		{"(b) SIGKILL keeps addresses", ic.checkRestart},
		{"(c) rmpeer of a dead peer", ic.checkRmpeer},
		{"(f) weave reset hands space over", ic.checkResetHandOver},
	}
	for _, p := range phases {
		t.Logf("=== phase %s", p.name)
		p.run(t)
	}
}

// (a) attach with no address on each host: all distinct, in range, reach
// each other; `weave status ipam` lists the three peers' shares.
func (ic *ipamCluster) checkConsensus(t *testing.T) {
	seen := map[string]string{}
	for i := 1; i <= 3; i++ {
		c := ic.attachAuto(i, fmt.Sprintf("c%d", i))
		if other, dup := seen[c.IP()]; dup {
			t.Fatalf("c%d got %s, already given to %s", i, c.IP(), other)
		}
		seen[c.IP()] = c.Name
	}
	for _, p := range [][2]string{{"c1", "c2"}, {"c2", "c3"}, {"c3", "c1"}} {
		from, to := ic.byName[p[0]], ic.byName[p[1]]
		waitPingIP(t, from.NS, p[0]+" -> "+p[1], to.IP())
	}
	var out string
	netnstest.WaitFor(t, 20*time.Second, "three shares in `weave status ipam` on h1", func() error {
		out = ic.weave(1, "status", "ipam")
		shares := parseIPAMStatus(out)
		total := 0
		for _, s := range shares {
			total += s.ips
		}
		if len(shares) != 3 || total != 1<<(32-ic.rng.Bits()) {
			return fmt.Errorf("want 3 peers sharing %d IPs:\n%s", 1<<(32-ic.rng.Bits()), out)
		}
		return nil
	})
	t.Logf("h1 `weave status ipam`:\n%s", out)
	shares := parseIPAMStatus(out)
	if shares[0].peer != peerName(1) || shares[0].active != 1 {
		t.Errorf("first line must be h1 with (1 active):\n%s", out)
	}
	for i := 1; i <= 3; i++ {
		if s, ok := shareOf(shares, peerName(i)); !ok || s.ips == 0 || s.unreachable {
			t.Errorf("h%d share missing, empty or unreachable:\n%s", i, out)
		}
	}
	status := ic.weave(1, "status")
	if !strings.Contains(status, "        Service: ipam\n         Status: ready\n          Range: 10.40.0.0/22\n") {
		t.Errorf("`weave status` ipam section:\n%s", status)
	}
	code, metrics, err := ic.routerGET(1, "/metrics")
	for _, want := range []string{"\nweave_ips{state=\"local-used\"} 1\n", "\nweave_max_ips 1024", "\nweave_ipam_unreachable_count 0\n"} {
		if err != nil || code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("h1 /metrics (%d, %v) lacks %q", code, err, want)
		}
	}
}

// (e) weave expose allocates the host an address on the bridge; the host
// then reaches a local and a remote container.
func (ic *ipamCluster) checkExpose(t *testing.T) {
	out := strings.TrimSpace(ic.weave(1, "expose"))
	ip, err := netip.ParseAddr(out)
	if err != nil || !ic.rng.Contains(ip) {
		t.Fatalf("weave expose printed %q, want one address in %s", out, ic.rng)
	}
	for name, c := range ic.byName {
		if c.IP() == ip.String() {
			t.Fatalf("expose got %s, already %s's", ip, name)
		}
	}
	want := netip.PrefixFrom(ip, ic.rng.Bits()).String()
	if got := ifaceAddrs(t, ic.host(1).NS, "weave"); !contains2(got, want) {
		t.Fatalf("bridge on h1 has %q, want %s", got, want)
	}
	if again := strings.TrimSpace(ic.weave(1, "expose")); again != out {
		t.Errorf("second weave expose printed %q, want the same %q", again, out)
	}
	waitPingIP(t, ic.host(1).NS, "h1 -> c1", ic.byName["c1"].IP())
	waitPingIP(t, ic.host(1).NS, "h1 -> c2", ic.byName["c2"].IP())
}

func contains2(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// (b) kill -9 h2's router and relaunch it: c2 keeps its address in IPAM
// and on its interface, and a new allocation gets a different one.
func (ic *ipamCluster) checkRestart(t *testing.T) {
	c2 := ic.byName["c2"]
	ic.kill9(2)
	ic.launch(2)
	code, body, err := ic.routerGET(2, "/ip/"+c2.NS)
	if err != nil || code != 200 || body != c2.CIDR {
		t.Fatalf("GET /ip/%s on relaunched h2 = %d %q (%v), want %s", c2.NS, code, body, err, c2.CIDR)
	}
	if got := ifaceAddrs(t, c2.NS, "ethwe"); len(got) != 1 || got[0] != c2.CIDR {
		t.Fatalf("c2's ethwe has %q, want [%s]", got, c2.CIDR)
	}
	c4 := ic.attachAuto(2, "c4")
	for name, c := range ic.byName {
		if name != "c4" && c.IP() == c4.IP() {
			t.Fatalf("new allocation on relaunched h2 reused %s's address %s", name, c4.IP())
		}
	}
	waitPingIP(t, ic.byName["c1"].NS, "c1 -> c2 after h2 relaunch", c2.IP())
	waitPingIP(t, c4.NS, "c4 -> c3", ic.byName["c3"].IP())
}

// (c) h3's router dies for good; after `weave rmpeer` on h1 the survivors
// own the whole range and allocate within seconds.
func (ic *ipamCluster) checkRmpeer(t *testing.T) {
	ic.kill9(3)
	var out string
	netnstest.WaitFor(t, 30*time.Second, "h3 shown unreachable on h1", func() error {
		out = ic.weave(1, "status", "ipam")
		if s, ok := shareOf(parseIPAMStatus(out), peerName(3)); !ok || !s.unreachable {
			return fmt.Errorf("h3 not unreachable yet:\n%s", out)
		}
		return nil
	})
	rm := strings.TrimSpace(ic.weave(1, "rmpeer", peerName(3)))
	var n int
	if _, err := fmt.Sscanf(rm, "%d IPs taken over from "+peerName(3), &n); err != nil || n == 0 {
		t.Fatalf("weave rmpeer printed %q, want \"N IPs taken over from %s\" with N > 0", rm, peerName(3))
	}
	start := time.Now()
	netnstest.WaitFor(t, takeoverTimeout, "h1 and h2 own the whole range", func() error {
		for _, i := range []int{1, 2} {
			out = ic.weave(i, "status", "ipam")
			shares := parseIPAMStatus(out)
			total := 0
			for _, s := range shares {
				total += s.ips
			}
			if _, has3 := shareOf(shares, peerName(3)); has3 || total != 1<<(32-ic.rng.Bits()) {
				return fmt.Errorf("h%d still lists h3 or misses space:\n%s", i, out)
			}
		}
		return nil
	})
	// Only h3's former space holds h3's own container address: ask for
	// addresses in the /24 around it, on the taker and on the other survivor.
	former := netip.PrefixFrom(netip.MustParseAddr(ic.byName["c3"].IP()), 24).Masked()
	ic.attachIn(1, "c5", former)
	ic.attachIn(2, "c6", former)
	ic.attachAuto(2, "c7")
	if d := time.Since(start); d > takeoverTimeout {
		t.Errorf("allocating after rmpeer took %v, want < %v", d, takeoverTimeout)
	}
	t.Logf("after rmpeer (%s), h2 `weave status ipam`:\n%s", rm, out)
}

// (f) `weave reset` on h2 hands its ranges to h1 before the router stops.
func (ic *ipamCluster) checkResetHandOver(t *testing.T) {
	ic.weave(2, "reset")
	var out string
	netnstest.WaitFor(t, takeoverTimeout, "h1 owns the whole range after h2's reset", func() error {
		out = ic.weave(1, "status", "ipam")
		shares := parseIPAMStatus(out)
		if len(shares) != 1 || shares[0].peer != peerName(1) || shares[0].ips != 1<<(32-ic.rng.Bits()) {
			return fmt.Errorf("h1 `weave status ipam`:\n%s", out)
		}
		return nil
	})
	ic.attachIn(1, "c8", netip.PrefixFrom(netip.MustParseAddr(ic.byName["c2"].IP()), 24).Masked())
}

// TestIPAMPersistenceEdges: a changed --ipalloc-range discards the old ring
// with a log line, and a corrupt database stops the router with a message
// naming the file, which is left as it was.
func TestIPAMPersistenceEdges(t *testing.T) {
	t.Parallel()
	ic := newIPAMCluster(t, 1, "10.42.0.0/24")
	ic.solo = true // quorum 1: the ring is created at the first allocation
	h := ic.host(1)
	ic.launch(1)
	ic.attachAuto(1, "c1")
	ic.weave(1, "stop")

	ic.rng = netip.MustParsePrefix("10.43.0.0/24")
	ic.launch(1)
	c2, c3 := ic.attachAuto(1, "c2"), ic.attachAuto(1, "c3")
	log, err := os.ReadFile(filepath.Join(h.RunDir, "weaver.log"))
	if err != nil || !strings.Contains(string(log), "--ipalloc-range changed") {
		t.Errorf("relaunch with another range did not log the discarded ring (%v):\n%s", err, log)
	}

	// c3's namespace disappears while the router is down: the next start
	// releases its address and keeps c2's.
	ic.weave(1, "stop")
	if out, err := exec.Command("ip", "netns", "del", c3.NS).CombinedOutput(); err != nil {
		t.Fatalf("delete %s: %v: %s", c3.NS, err, out)
	}
	ic.launch(1)
	ic.expectIP(1, c2.NS, c2.CIDR)
	ic.expectIP(1, c3.NS, "")
	ic.weave(1, "stop")

	db := filepath.Join(h.DataDir, "weavedata.db")
	junk := bytes.Repeat([]byte("not a bolt database "), 1000)
	if err := os.WriteFile(db, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := ic.tp.Weave(h, "launch", "--name", peerName(1), "--ipalloc-range", ic.rng.String(), "--no-fastdp")
	if err == nil {
		t.Fatalf("launch with a corrupt database succeeded:\n%s", out)
	}
	t.Logf("launch with a corrupt database: %v", err)
	if msg := err.Error() + out; !strings.Contains(msg, db) || !strings.Contains(msg, "unreadable") {
		t.Errorf("launch error does not name %s as unreadable: %v\n%s", db, err, out)
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(after, junk) {
		t.Errorf("the corrupt database was modified (%d bytes, was %d)", len(after), len(junk))
	}

	// Moved aside, as the message says. The ring state is gone while c2
	// still runs: the router must not seed a new ring alone (issue 9: two
	// hosts handed out the same addresses); it waits for peers and says
	// how to start a new ring on purpose.
	if err := os.Rename(db, db+".corrupt"); err != nil {
		t.Fatal(err)
	}
	ic.launch(1)
	if log, err := os.ReadFile(filepath.Join(h.RunDir, "weaver.log")); err != nil ||
		!strings.Contains(string(log), "not starting a new IPAM ring alone") ||
		!strings.Contains(string(log), "--ipalloc-init=consensus=N") {
		t.Errorf("launch with the database gone did not refuse to seed a ring alone (%v):\n%s", err, log)
	}
	if code, body, err := ic.routerGET(1, "/status/ipam"); err != nil || !strings.Contains(body, "observer") {
		t.Logf("status ipam while waiting for peers: %d %q %v", code, body, err)
	}
	ic.weave(1, "stop")

	// On purpose, as the message says: consensus=1 starts a new ring, and
	// the address of the live container c2 is claimed again at start.
	ic.extra = append(ic.extra, "--ipalloc-init", "consensus=1")
	ic.launch(1)
	ic.expectIP(1, c2.NS, c2.CIDR)
	if c4 := ic.attachAuto(1, "c4"); c4.IP() == c2.IP() {
		t.Errorf("c4 got c2's address %s after the database was replaced", c4.IP())
	}
}

// expectIP checks GET /ip/<id> on host i: want is the CIDR, or "" for
// "no address" (200 with an empty body, as 2.8.1).
func (ic *ipamCluster) expectIP(i int, id, want string) {
	ic.t.Helper()
	code, body, err := ic.routerGET(i, "/ip/"+id)
	switch {
	case err != nil:
		ic.t.Fatalf("GET /ip/%s on h%d: %v", id, i, err)
	case code != 200 || body != want:
		ic.t.Errorf("GET /ip/%s on h%d = %d %q, want %s", id, i, code, body, want)
	}
}

// (d) consensus=3 with one router up: attach fails within the bounded wait
// naming what is missing, and `weave status ipam` says the same.
func TestIPAMConsensusImpossible(t *testing.T) {
	t.Parallel()
	ic := newIPAMCluster(t, 1, "10.41.0.0/24", "--ipalloc-init", "consensus=3", "--ipalloc-consensus-timeout=3s")
	ic.solo = true
	ic.launch(1)
	c := ic.tp.NewContainer(ic.host(1), "c1", "")
	start := time.Now()
	out, err := ic.tp.Weave(ic.host(1), "attach", netnstest.NSPath(c.NS))
	took := time.Since(start)
	if err == nil {
		t.Fatalf("attach succeeded without consensus: %q", out)
	}
	t.Logf("attach failed after %v: %v", took.Round(time.Millisecond), err)
	if took > 30*time.Second {
		t.Errorf("attach took %v to fail, want a bounded wait (3s timeout + one tick)", took)
	}
	for _, want := range []string{"awaiting consensus", "quorum: 2", "more peer(s) must join"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("attach error lacks %q: %v", want, err)
		}
	}
	status := ic.weave(1, "status", "ipam")
	if !strings.Contains(status, "awaiting consensus") {
		t.Errorf("`weave status ipam` does not say awaiting consensus:\n%s", status)
	}
	if _, e := netnstest.Output(c.NS, "ip", "link", "show", "ethwe"); e == nil {
		t.Errorf("a failed attach left an ethwe interface in the container")
	}
}
