package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

var ipv6Only3 = []string{netnstest.UnderlayIPv6, netnstest.UnderlayIPv6, netnstest.UnderlayIPv6}

// TestIPv6UnderlayThreeHosts: three hosts with an IPv6-only underlay, h1
// and h3 launched with `[fd00:100::2]` as peer. h1 and h3 find each other
// by discovery (h2's inbound connection addresses, joined with our port
// as [v6]:6783). Every link runs the fast path over IPv6: fastdp with no
// fallback and the MTU 1500 - 70 (VXLAN over IPv6), IPv6 VXLAN devices,
// containers with IPv4 overlay addresses ping and carry TCP by the kernel
// path. Sleeve, beside it for broadcasts and fallback, still verifies its
// own IPv6 MTU (1418), and liveness runs over IPv6.
func TestIPv6UnderlayThreeHosts(t *testing.T) {
	t.Parallel()
	cl := newFastCluster(t, clusterOpts{hosts: 3, hub: 2, underlay: ipv6Only3})
	cl.waitEstablished(1, 2)
	cl.waitEstablished(3, 2)
	cl.waitEstablished(1, 3)
	for i := 1; i <= 3; i++ {
		for j := 1; j <= 3; j++ {
			if i == j {
				continue
			}
			// 1500 - 40 (IPv6) - 8 (UDP) - 8 (VXLAN) - 14 (inner Ethernet).
			if st := cl.waitLink(i, j, "fastdp over IPv6", onVXLAN); st.mtu != "1430" {
				t.Fatalf("h%d->h%d mtu = %s, want 1430 (1500 - 70)", i, j, st.mtu)
			}
		}
	}
	if devs := cl.vxlanDetails(1); strings.Count(devs, "local "+cl.host(1).IP6+" ") != 2 {
		t.Fatalf("h1 has not two IPv6 VXLAN devices (local %s):\n%s", cl.host(1).IP6, devs)
	}
	cl.waitPing(1, 3)
	cl.waitPing(3, 1)
	cl.waitPing(2, 1)
	cl.tcpTransfer(1, 3, 4<<20)
	cl.tcpTransfer(2, 1, 4<<20)
	// The kernel carried them: h1's bridge learned c3 and c2 on vxw ports.
	for _, j := range []int{2, 3} {
		if ok, fdb := cl.learnedOnVXLAN(1, cl.containerMAC(j)); !ok {
			t.Fatalf("h1 bridge did not learn c%d (%s) on a vxw port:\n%s", j, cl.containerMAC(j), fdb)
		}
	}
	// 1500 - 40 (IPv6) - 8 (UDP) - 34: 20 bytes below IPv4's 1438.
	cl.waitLogLine(1, "Effective MTU verified at 1418", peerName(3))
	// Liveness runs over IPv6 too.
	cl.waitAlive(1, 2)
	cl.waitAlive(1, 3)
	// The CLI takes [v6]:port and refuses a malformed IPv6 peer by name.
	cl.weave(1, "connect", "[fd00:100::3]:6783")
	if out, err := cl.tp.Weave(cl.host(1), "connect", "[fd00:100::zz]"); err == nil || !strings.Contains(err.Error()+out, `"fd00:100::zz" is not an IPv6 address`) {
		t.Fatalf("weave connect [fd00:100::zz]: err %v, want a refusal naming it:\n%s", err, out)
	}
}

// TestIPv6UnderlayFastDPSmallMTU: two IPv6-only hosts whose underlay
// carries 1400 bytes. The default MTU follows in IPv6 terms (1400 - 70 =
// 1330): the link is fastdp at mtu=1330, a full-size packet with DF
// crosses, and TCP flows.
func TestIPv6UnderlayFastDPSmallMTU(t *testing.T) {
	t.Parallel()
	cl := newFastCluster(t, clusterOpts{hosts: 2, noLaunch: []int{1, 2},
		underlay: []string{netnstest.UnderlayIPv6, netnstest.UnderlayIPv6}})
	for i := 1; i <= 2; i++ {
		h := cl.host(i)
		for _, c := range [][]string{{h.NS, "eth0"}, {cl.tp.Underlay, "v" + h.Name}} {
			if err := netnstest.Exec(c[0], "ip", "link", "set", c[1], "mtu", "1400"); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 1; i <= 2; i++ {
		cl.launch(i)
		cl.attach(i)
	}
	for _, p := range [][2]int{{1, 2}, {2, 1}} {
		if st := cl.waitLink(p[0], p[1], "fastdp over IPv6", onVXLAN); st.mtu != "1330" {
			t.Fatalf("h%d->h%d mtu = %s, want 1330 (1400 - 70)", p[0], p[1], st.mtu)
		}
	}
	cl.waitPing(1, 2)
	// IP 1330 = ICMP payload 1302, DF set: exactly the overlay MTU.
	if out, err := netnstest.Ping(cl.container(1).NS, cl.container(2).IP(), 3, "-M", "do", "-s", "1302"); err != nil || !strings.Contains(out, " 0% packet loss") {
		t.Fatalf("full-size ping c1 -> c2: %v\n%s", err, out)
	}
	cl.tcpTransfer(2, 1, 4<<20)
	if ok, fdb := cl.learnedOnVXLAN(1, cl.containerMAC(2)); !ok {
		t.Fatalf("h1 bridge did not learn c2 on a vxw port:\n%s", fdb)
	}
}

// TestIPv6UnderlayEncrypted: two IPv6-only hosts with a password, the
// second bound with --host to its IPv6 address (sleeve then has only the
// IPv6 socket pair) and given its peer as [v6]:port: encrypted sleeve,
// MTU 20 bytes below IPv4's 1414, containers ping, liveness alive.
func TestIPv6UnderlayEncrypted(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 2, password: "s3cret", noLaunch: []int{2},
		underlay: []string{netnstest.UnderlayIPv6, netnstest.UnderlayIPv6}})
	args := cl.launchArgs(2)                      // ends with the hub as [fd00:100::1]
	args = append(args[:len(args)-1:len(args)-1], // flags come before peers
		"--host", cl.host(2).IP6, "[fd00:100::1]:6783")
	if _, err := cl.tp.StartRouter(cl.host(2), args...); err != nil {
		t.Fatal(err)
	}
	cl.attach(2)
	cl.waitEstablished(2, 1)
	cl.waitEstablished(1, 2)
	checkEncryptionStatus(t, cl, true)
	cl.waitLogLine(2, "Effective MTU verified at 1394", peerName(1))
	cl.waitPing(1, 2)
	cl.waitPing(2, 1)
	cl.waitAlive(2, 1)
	cl.waitAlive(1, 2)
}

// TestMixedUnderlay: h1 has IPv4 only (IPv6 disabled), h2 both, h3 IPv6
// only, all on the fast path with --mtu 1430 (one MTU for the mesh that
// VXLAN over IPv6 can carry on 1500 bytes). h1 joins h2 over IPv4, h3 over
// IPv6, naming h2 by a host name whose only address is IPv6 (an AAAA-only
// name). h2's link to h1 is fastdp over IPv4 and its link to h3 fastdp
// over IPv6, both at once. c1 and c3 reach each other through h2, which
// relays between its IPv4 and its IPv6 link (relayed frames go by
// sleeve). h1 never gets a link to h3 (no common family) and keeps working
// although the gossip tells it h3's IPv6 address.
//
// Liveness runs in one membership per family (docs/liveness.md, "Mixed
// underlay families"): h2 is in both, h1 only in the IPv4 one, h3 only in
// the IPv6 one. Once all see their family's peers alive, nobody suspects
// or declares anyone dead, and no connection is closed, for longer than
// memberlist's longest suspicion timeout (with one membership for all, h3
// declared h2 dead about 2 s after joining and the router cut the link);
// h1 and h3 have no verdict on each other. Then h3 is SIGKILLed: h2, its
// only peer of its family, sees it dead within seconds, h1 still has no
// verdict on it, and h1's link to h2 stays up.
func TestMixedUnderlay(t *testing.T) {
	t.Parallel()
	cl := newFastCluster(t, clusterOpts{hosts: 3, hub: 2, noLaunch: []int{3}, extra: []string{"--mtu", "1430"},
		underlay: []string{netnstest.UnderlayIPv4, netnstest.UnderlayDual, netnstest.UnderlayIPv6}})
	cl.tp.SetHosts(cl.host(3), "127.0.0.1 localhost\n::1 localhost\n"+cl.host(2).IP6+" hub.v6.test\n")
	args := cl.launchArgs(3)
	args[len(args)-1] = "hub.v6.test"
	if _, err := cl.tp.StartRouter(cl.host(3), args...); err != nil {
		t.Fatal(err)
	}
	cl.attach(3)
	netnstest.WaitFor(t, establishTimeout, "h2 on fastdp over IPv4 to h1 and over IPv6 to h3", func() error {
		conns, out, err := cl.connections(2)
		if err != nil {
			return err
		}
		var v4, v6 bool
		for _, c := range conns {
			fast := c.State == "established" && strings.HasPrefix(c.Info, "fastdp ") && !strings.Contains(c.Info, "fallback=")
			v4 = v4 || (fast && strings.HasPrefix(c.Addr, cl.host(1).IP+":") && strings.Contains(c.Info, peerName(1)))
			v6 = v6 || (fast && strings.HasPrefix(c.Addr, "["+cl.host(3).IP6+"]:") && strings.Contains(c.Info, peerName(3)))
		}
		if !v4 || !v6 {
			return fmt.Errorf("fastdp IPv4 link to h1 %v, fastdp IPv6 link to h3 %v:\n%s", v4, v6, out)
		}
		return nil
	})
	cl.waitLink(1, 2, "fastdp over IPv4", onVXLAN)
	cl.waitLink(3, 2, "fastdp over IPv6", onVXLAN)
	if devs := cl.vxlanDetails(2); !strings.Contains(devs, "local "+cl.host(2).IP+" ") || !strings.Contains(devs, "local "+cl.host(2).IP6+" ") {
		t.Fatalf("h2 lacks an IPv4 (local %s) or an IPv6 (local %s) VXLAN device:\n%s", cl.host(2).IP, cl.host(2).IP6, devs)
	}
	cl.waitPing(1, 3)
	cl.waitPing(3, 1)
	cl.waitPing(1, 2)
	cl.waitPing(3, 2)
	cl.tcpTransfer(1, 2, 2<<20)
	cl.tcpTransfer(3, 2, 2<<20)
	cl.tcpTransfer(1, 3, 1<<20)
	for _, j := range []int{1, 3} {
		if ok, fdb := cl.learnedOnVXLAN(2, cl.containerMAC(j)); !ok {
			t.Fatalf("h2 bridge did not learn c%d on a vxw port:\n%s", j, fdb)
		}
	}
	if ok, out, _ := cl.establishedTo(1, 3); ok {
		t.Fatalf("h1 (IPv4 only) has an established link to h3 (IPv6 only):\n%s", out)
	}
	checkMixedLiveness(t, cl)
}

// falseVerdict matches what a router logs when liveness suspects or
// declares a peer dead (memberlist's own lines and ours) or closes a
// connection for it.
var falseVerdict = regexp.MustCompile(`as failed|has failed, no acks|to=suspect|to=dead|declared dead`)

// mixedWatch is how long TestMixedUnderlay watches for a false verdict
// after every router saw its family's peers alive: more than memberlist's
// longest suspicion timeout in a membership of two at our timing (6 x 3 x
// 400 ms + 400 ms = 7.6 s).
const mixedWatch = 10 * time.Second

func checkMixedLiveness(t *testing.T, cl *cluster) {
	t.Helper()
	cl.waitAlive(1, 2)
	cl.waitAlive(2, 1)
	cl.waitAlive(2, 3)
	cl.waitAlive(3, 2)
	for i := 1; i <= 3; i++ {
		cl.waitLogLine(i, "peer liveness changed", "to=alive")
	}
	end := time.Now().Add(mixedWatch)
	for n := 0; time.Now().Before(end); n++ {
		for i := 1; i <= 3; i++ {
			if l := cl.logMatches(i, falseVerdict); l != "" {
				t.Fatalf("h%d's liveness gave a live peer a verdict:\n%s", i, l)
			}
		}
		for _, p := range [][2]int{{2, 1}, {2, 3}, {1, 2}, {3, 2}} {
			if ok, out, err := cl.establishedTo(p[0], p[1]); !ok {
				t.Fatalf("h%d's link to h%d is not established (%v):\n%s", p[0], p[1], err, out)
			}
		}
		if n%8 == 0 {
			for _, p := range [][2]int{{1, 3}, {3, 1}} {
				if e, ok := cl.livenessView(p[0])[peerName(p[1])]; ok {
					t.Fatalf("h%d has a liveness verdict on h%d, with no family in common: %+v", p[0], p[1], e)
				}
			}
		}
		time.Sleep(250 * time.Millisecond) // a watch: every round checks the logs again
	}
	pidText, err := os.ReadFile(filepath.Join(cl.host(3).RunDir, "weaver.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var since time.Time
	netnstest.WaitFor(t, establishTimeout, "h2 sees the killed h3 dead", func() error {
		e := cl.livenessView(2)[peerName(3)]
		if e.State != "dead" {
			return fmt.Errorf("h3 is %q to h2", e.State)
		}
		since = e.Since
		return nil
	})
	took := since.Sub(killed)
	t.Logf("h2 (dual-stack) saw h3 (IPv6 only) dead %v after its SIGKILL", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("h2 saw h3 dead %v after the kill, want within 10 s", took)
	}
	if e, ok := cl.livenessView(1)[peerName(3)]; ok {
		t.Errorf("h1 has a liveness verdict on h3, with no family in common: %+v", e)
	}
	if l := cl.logMatches(1, falseVerdict); l != "" {
		t.Errorf("h1's liveness gave a verdict after h3's death:\n%s", l)
	}
	if e := cl.livenessView(1)[peerName(2)]; e.State != "alive" {
		t.Errorf("h2 is %q to h1 after h3's death, want alive", e.State)
	}
	if ok, out, err := cl.establishedTo(1, 2); !ok {
		t.Errorf("h1's link to h2 is not established after h3's death (%v):\n%s", err, out)
	}
}

// livenessView is host i's liveness view from weave report (nil when it
// cannot be read).
func (cl *cluster) livenessView(i int) map[string]liveEntry {
	cl.t.Helper()
	var r livenessReport
	if err := json.Unmarshal([]byte(cl.weave(i, "report")), &r); err != nil {
		cl.t.Fatalf("decode weave report of h%d: %v", i, err)
	}
	return r.Router.Liveness
}

// logMatches is the first line of host i's weaver.log that re matches, or "".
func (cl *cluster) logMatches(i int, re *regexp.Regexp) string {
	cl.t.Helper()
	b, err := os.ReadFile(filepath.Join(cl.host(i).RunDir, "weaver.log"))
	if err != nil {
		cl.t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if re.MatchString(l) {
			return l
		}
	}
	return ""
}

// waitLogLine waits until host i's weaver.log has a line with every one
// of parts (sleeve logs its verified path MTU there; status shows the
// framing's larger overlay MTU once jumbo or segmented framing is on).
func (cl *cluster) waitLogLine(i int, parts ...string) {
	cl.t.Helper()
	path := filepath.Join(cl.host(i).RunDir, "weaver.log")
	netnstest.WaitFor(cl.t, establishTimeout, fmt.Sprintf("h%d logs %q", i, parts), func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
	lines:
		for _, l := range strings.Split(string(b), "\n") {
			for _, p := range parts {
				if !strings.Contains(l, p) {
					continue lines
				}
			}
			return nil
		}
		return fmt.Errorf("no such line in %s", path)
	})
}

// waitAlive waits until host i's liveness view (weave report) has host j
// alive.
func (cl *cluster) waitAlive(i, j int) {
	cl.t.Helper()
	netnstest.WaitFor(cl.t, establishTimeout, fmt.Sprintf("h%d's liveness sees h%d alive", i, j), func() error {
		out := cl.weave(i, "report")
		var r livenessReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			return fmt.Errorf("decode weave report: %w", err)
		}
		if e := r.Router.Liveness[peerName(j)]; e.State != "alive" {
			return fmt.Errorf("h%d is %q in h%d's liveness view %v", j, e.State, i, r.Router.Liveness)
		}
		return nil
	})
}
