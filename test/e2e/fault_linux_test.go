//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// Fault tests of issue 28: a dead peer settles everywhere it shows, a
// deleted dead Node is reclaimed within seconds (kube_fault_linux_test.go),
// and a heal after --ipalloc-reclaim-after never holds an address twice.
// Each fault is repeated faultRuns times (WEAVE_FAULT_RUNS, default 2:
// make test stays within a couple of minutes; set 10 or more for figures).

// Settle targets: liveness declares a vanished peer dead in ~2 s (p50
// 2.0-2.3 s on a loaded 2-core VM, docs/liveness.md); the rest must follow
// within a gossip round of that.
const (
	settleP50 = 3500 * time.Millisecond
	settleP99 = 10 * time.Second
)

func faultRuns(t *testing.T) int {
	t.Helper()
	s := os.Getenv("WEAVE_FAULT_RUNS")
	if s == "" {
		return 2
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("WEAVE_FAULT_RUNS=%q: want a positive count", s)
	}
	return n
}

// settleView is what /report says about other peers.
type settleView struct {
	Router struct {
		Liveness    map[string]liveEntry
		Peers       []struct{ Name string }
		Connections []struct {
			Address, State, Info string
		}
		UnicastRoutes []struct{ Dest, Via string }
		MACs          []struct{ Mac, Name string }
	}
}

func (ic *ipamCluster) settleView(i int) (settleView, error) {
	var v settleView
	code, body, err := ic.routerGET(i, "/report")
	if err != nil {
		return v, err
	}
	if code != 200 {
		return v, fmt.Errorf("GET /report on h%d: %d %s", i, code, body)
	}
	return v, json.Unmarshal([]byte(body), &v)
}

// unsettled says where observer i still treats victim as up ("" when it
// agrees everywhere that the victim is dead): liveness, an established
// mesh connection, a route to or through it, a MAC learnt behind it; and
// whether mesh still has it in its topology (garbage-collected once no
// peer reports a connection to it).
func (ic *ipamCluster) unsettled(i, victim int) (left string, since time.Time, known bool, err error) {
	v, err := ic.settleView(i)
	if err != nil {
		return "", time.Time{}, false, err
	}
	name, ip := peerName(victim), ic.host(victim).IP
	var what []string
	if l := v.Router.Liveness[name]; l.State != "dead" {
		what = append(what, "liveness "+l.State)
	}
	for _, c := range v.Router.Connections {
		if strings.HasPrefix(c.Address, ip+":") && c.State == "established" {
			what = append(what, "connection established")
		}
	}
	for _, r := range v.Router.UnicastRoutes {
		if r.Dest == name || r.Via == name {
			what = append(what, "route "+r.Dest+" via "+r.Via)
		}
	}
	for _, m := range v.Router.MACs {
		if m.Name == name {
			what = append(what, "MAC "+m.Mac)
		}
	}
	for _, p := range v.Router.Peers {
		known = known || p.Name == name
	}
	return strings.Join(what, ", "), v.Router.Liveness[name].Since, known, nil
}

// awaitSettled polls every observer until each agrees that victim is
// dead everywhere and mesh has forgotten it; it returns, per observer, how
// long after start each happened (and logs when liveness declared it).
func (ic *ipamCluster) awaitSettled(t *testing.T, observers []int, victim int, start time.Time) (settled, forgotten map[int]time.Duration) {
	t.Helper()
	settled, forgotten = map[int]time.Duration{}, map[int]time.Duration{}
	last := map[int]string{}
	measureFor(t, 60*time.Second, fmt.Sprintf("h%d dead everywhere on %v", victim, observers), func() error {
		var why []string
		for _, o := range observers {
			if _, ok := forgotten[o]; ok {
				continue
			}
			left, since, known, err := ic.unsettled(o, victim)
			if err != nil {
				why = append(why, err.Error())
				continue
			}
			now := time.Since(start)
			if _, ok := settled[o]; !ok && left == "" {
				settled[o] = now
				t.Logf("h%d: h%d dead (liveness) after %v, everywhere after %v (last left: %s)", o, victim,
					since.Sub(start).Round(time.Millisecond), now.Round(time.Millisecond), last[o])
			}
			last[o] = left
			if left != "" {
				why = append(why, fmt.Sprintf("h%d: %s", o, left))
				continue
			}
			if known {
				why = append(why, fmt.Sprintf("h%d: still in the topology", o))
				continue
			}
			forgotten[o] = now
		}
		if len(why) > 0 {
			return fmt.Errorf("%s", strings.Join(why, "; "))
		}
		return nil
	})
	return settled, forgotten
}

// measureFor is netnstest.WaitFor polling every 100 ms throughout (WaitFor
// backs off to 500 ms), for conditions whose time is the figure.
func measureFor(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %v for %s: %v", timeout, what, err)
		}
		time.Sleep(100 * time.Millisecond) // the sampling period of the figure
	}
}

// isolate cuts (or restores) every underlay link of host i.
func (ic *ipamCluster) isolate(i int, cut bool) {
	ic.partition([]int{i}, others(ic.hosts, i), cut)
}

func logFigures(t *testing.T, what string, samples []time.Duration) (p50, p99 time.Duration) {
	t.Helper()
	slices.Sort(samples)
	p50, p99 = percentile(samples, 50), percentile(samples, 99)
	t.Logf("%s: %d samples, p50 %v, p99 %v, max %v", what, len(samples),
		p50.Round(time.Millisecond), p99.Round(time.Millisecond), samples[len(samples)-1].Round(time.Millisecond))
	return p50, p99
}

// TestFaultDeadPeerSettlesEverywhere: h4 of 4 vanishes, silently (every
// packet to and from it dropped: no reset, mesh's own timeout is 60 s) or
// SIGKILLed, faultRuns times each. Every survivor must agree it is dead in
// every place it shows: liveness, no established mesh connection (closed,
// not left to the heartbeat timeout), no route to or through it, no MAC
// behind it, gone from the topology; `weave status connections` says why
// the target is down. Times from the fault to each survivor agreeing are
// the samples (p50 <= 3.5 s, p99 <= 10 s). After each fault h4 comes back
// and c1 reaches c4 again.
func TestFaultDeadPeerSettlesEverywhere(t *testing.T) {
	t.Parallel()
	ic := newIPAMCluster(t, 4, "10.47.0.0/22")
	for i := 1; i <= 4; i++ {
		ic.launch(i)
	}
	for i := 1; i <= 4; i++ {
		ic.attachAuto(i, fmt.Sprintf("c%d", i))
	}
	for i := 1; i <= 4; i++ {
		ic.awaitLiveness(t, others(4, i), i, "alive")
	}
	c1, c4 := ic.byName["c1"], ic.byName["c4"]
	survivors := others(4, 4)
	samples, gone := map[string][]time.Duration{}, map[string][]time.Duration{}
	for range faultRuns(t) {
		for _, kind := range []string{"silent", "SIGKILL"} {
			waitPingIP(t, c1.NS, "c1 -> c4 before the fault", c4.IP()) // c4's MAC is learnt everywhere
			start := time.Now()
			if kind == "silent" {
				ic.isolate(4, true)
			} else {
				ic.kill9(4)
			}
			settled, forgotten := ic.awaitSettled(t, survivors, 4, start)
			for o, d := range settled {
				samples[kind] = append(samples[kind], d)
				gone[kind] = append(gone[kind], forgotten[o])
			}
			ic.checkStatusConnections(t, 1, 4, kind == "silent")
			if kind == "silent" {
				ic.isolate(4, false)
			} else {
				ic.launch(4)
			}
			ic.awaitLiveness(t, survivors, 4, "alive")
			// Recovery is not what is measured: mesh redials with backoff and
			// liveness re-joins, so allow it a moment to stop losing echoes.
			netnstest.WaitFor(t, 30*time.Second, "c1 -> c4 without loss after h4 came back", func() error {
				if out, err := netnstest.Ping(c1.NS, c4.IP(), 3); err != nil || !strings.Contains(out, " 0% packet loss") {
					return fmt.Errorf("%v\n%s", err, out)
				}
				return nil
			})
		}
	}
	var all []time.Duration
	for _, kind := range []string{"silent", "SIGKILL"} {
		logFigures(t, "dead peer settled on every survivor after "+kind, samples[kind])
		logFigures(t, "dead peer forgotten by mesh after "+kind, gone[kind])
		all = append(all, samples[kind]...)
	}
	if p50, p99 := logFigures(t, "dead peer settled, all faults", all); p50 > settleP50 || p99 > settleP99 {
		t.Errorf("settling too slow: p50 %v (target %v), p99 %v (target %v)", p50, settleP50, p99, settleP99)
	}
}

// ringOwner is the owner of addr in a `/report` IPAM ring.
type ringEntry struct {
	Token string
	Size  uint32
	Peer  string
}

func ownerOf(entries []ringEntry, addr netip.Addr) string {
	for _, e := range entries {
		start, err := netip.ParseAddr(e.Token)
		if err != nil {
			continue
		}
		s, a := ip4(start), ip4(addr)
		if a >= s && uint64(a) < uint64(s)+uint64(e.Size) {
			return e.Peer
		}
	}
	return ""
}

func ip4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

type ipamView struct {
	IPAM struct {
		Entries   []ringEntry
		Conflicts []struct{ Addr, Container, Owner string }
	}
}

func (ic *ipamCluster) ipamView(i int) ipamView {
	ic.t.Helper()
	var v ipamView
	code, body, err := ic.routerGET(i, "/report")
	if err != nil || code != 200 {
		ic.t.Fatalf("GET /report on h%d: %d %v", i, code, err)
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		ic.t.Fatalf("decode /report of h%d: %v", i, err)
	}
	return v
}

// TestFaultPartitionHealNoDuplicateAddress: h4 of 4 is cut off longer
// than --ipalloc-reclaim-after, so h1 takes its space over while h4 still
// holds containers there; both sides allocate meanwhile. After the heal
// h4 accepts the cluster's ring and claims back every address it holds;
// across every host no address is held twice, every container's address
// lies in its own host's space in every ring, no host reports a
// conflict, and new allocations after the heal stay distinct.
func TestFaultPartitionHealNoDuplicateAddress(t *testing.T) {
	t.Parallel()
	ic := newIPAMCluster(t, 4, "10.48.0.0/22", "--ipalloc-reclaim-after", "10s")
	for i := 1; i <= 4; i++ {
		ic.launch(i)
	}
	for i := 1; i <= 4; i++ {
		ic.attachAuto(i, fmt.Sprintf("c%d", i))
	}
	ic.attachAuto(4, "c4b")
	ic.awaitLiveness(t, others(4, 4), 4, "alive")
	ic.isolate(4, true)
	start := time.Now()
	ic.awaitLiveness(t, []int{1}, 4, "dead")
	n := 0
	netnstest.WaitFor(t, 60*time.Second, "h1 to reclaim h4's space while h4 is cut off", func() error {
		// Allocate on both sides meanwhile (one container a second).
		ic.attachAuto(1+n%4, fmt.Sprintf("p%d", n))
		n++
		for _, s := range parseIPAMStatus(ic.weave(1, "status", "ipam")) {
			if s.peer == peerName(4) && s.ips > 0 {
				return fmt.Errorf("h1 still lists h4's share after %v", time.Since(start).Round(time.Second))
			}
		}
		return nil
	})
	t.Logf("h1 took h4's space over %v after the cut (reclaim-after 10s)", time.Since(start).Round(time.Second))
	for k := 0; k < 4; k++ { // and after the takeover, on both sides
		ic.attachAuto(1+n%4, fmt.Sprintf("p%d", n))
		n++
	}
	ic.isolate(4, false)
	healed := time.Now()
	for i := 1; i <= 4; i++ {
		ic.awaitLiveness(t, others(4, i), i, "alive")
	}
	ic.awaitRingsAgree(t)
	netnstest.WaitFor(t, 60*time.Second, "every container's address in its own host's space on every host", func() error {
		for i := 1; i <= 4; i++ {
			v := ic.ipamView(i)
			if len(v.IPAM.Conflicts) > 0 {
				return fmt.Errorf("h%d reports conflicts %+v", i, v.IPAM.Conflicts)
			}
			for name, c := range ic.byName {
				host := c.Host.Index
				if o := ownerOf(v.IPAM.Entries, netip.MustParseAddr(c.IP())); o != peerName(host) {
					return fmt.Errorf("h%d's ring gives %s (%s on h%d) to %s", i, c.IP(), name, host, o)
				}
			}
		}
		return nil
	})
	t.Logf("healed: every address back with its holder %v after the heal", time.Since(healed).Round(time.Second))
	for i := 1; i <= 3; i++ {
		ic.attachAuto(i, fmt.Sprintf("after%d", i))
	}
	ic.requireDistinctAddresses(t)
	ic.requireNoConflictLogged(t)
	b, err := os.ReadFile(ic.host(4).RunDir + "/weaver.log")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "address claimed back from the peer that took over our space"); n == 0 {
		t.Errorf("h4 claimed nothing back: the heal did not go through the takeover it was cut off for")
	} else {
		t.Logf("h4 claimed back %d addresses", n)
	}
}

func (ic *ipamCluster) requireNoConflictLogged(t *testing.T) {
	t.Helper()
	for i := 1; i <= ic.hosts; i++ {
		b, err := os.ReadFile(ic.host(i).RunDir + "/weaver.log")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "IPAM conflict") {
			t.Errorf("h%d logged an IPAM conflict", i)
		}
	}
}

// checkStatusConnections: host i's `weave status connections` lists the
// victim's target as not established. After a silent death (connections
// closed by liveness, not reset), the hosts' outbound targets whose
// connection went say why (the closing side is the one that dialled, so
// look on every host, the victim included).
func (ic *ipamCluster) checkStatusConnections(t *testing.T, i, victim int, silent bool) {
	t.Helper()
	out := ic.weave(i, "status", "connections")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, ic.host(victim).IP+":") {
			lines = append(lines, l)
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "established") {
			t.Fatalf("h%d still shows h%d established after its death:\n%s", i, victim, out)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("h%d's `weave status connections` has no line for h%d's target:\n%s", i, victim, out)
	}
	if !silent {
		return
	}
	netnstest.WaitFor(t, 30*time.Second, "a host's `weave status connections` to say a connection went because its peer was declared dead", func() error {
		var all []string
		for j := 1; j <= ic.hosts; j++ {
			o := ic.weave(j, "status", "connections")
			if strings.Contains(o, "declared dead by liveness") {
				return nil
			}
			all = append(all, fmt.Sprintf("h%d:\n%s", j, o))
		}
		return fmt.Errorf("%s", strings.Join(all, "\n"))
	})
}
