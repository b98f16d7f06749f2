package e2e

import (
	"bytes"
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

// (a) Two hosts: c1 pings c2 across the overlay.
func TestTwoHostsPing(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 2})
	cl.waitEstablished(1, 2)
	cl.waitEstablished(2, 1)
	cl.waitPing(1, 2)
	cl.waitPing(2, 1)
}

// (b) Three hosts, h1<->h3 cut on the underlay: c1 reaches c3 through h2,
// and h1 has no established connection to h3.
func TestMultiHopAroundCutLink(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 3, hub: 2, cut: [][2]int{{1, 3}}})
	cl.waitEstablished(1, 2)
	cl.waitEstablished(3, 2)
	// h2 must have told h1 about h3 before the route through h2 exists.
	netnstest.WaitFor(t, establishTimeout, "h1 learns peer h3", func() error {
		out, err := cl.tp.Weave(cl.host(1), "status", "peers")
		if err != nil || !strings.Contains(out, peerName(3)) {
			return fmt.Errorf("h3 not in `weave status peers` on h1 (err %v):\n%s", err, out)
		}
		return nil
	})
	cl.waitPing(1, 3)
	cl.waitPing(3, 1)
	out, _ := cl.tp.Weave(cl.host(1), "status", "connections")
	t.Logf("h1 `weave status connections`:\n%s", out)
	for _, pair := range [][2]int{{1, 3}, {3, 1}} {
		ok, out, err := cl.establishedTo(pair[0], pair[1])
		if err != nil || ok {
			t.Fatalf("h%d must have no established link to h%d across the cut (err %v):\n%s", pair[0], pair[1], err, out)
		}
	}
}

// pingPattern is "WEAVE" in hex; ping fills its payload with it.
const pingPattern = "5745415645"

// (c) With a password no captured underlay byte shows the ping payload;
// without one it does (which proves the capture would catch a leak).
func TestEncryptionHidesPayload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, password string
		wantLeak       bool
	}{
		{"encrypted", "s3cret-w34ve", false},
		{"plain", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			netnstest.RequireTools(t, "tcpdump")
			cl := newCluster(t, clusterOpts{hosts: 2, password: tc.password})
			cl.waitEstablished(1, 2)
			cl.waitPing(1, 2)
			checkEncryptionStatus(t, cl, tc.password != "")
			pcap, captured := captureDuringPing(t, cl)
			if captured == 0 {
				t.Fatal("tcpdump captured no weave packets during the ping")
			}
			leak := bytes.Contains(pcap, []byte("WEAVEWEAVE"))
			t.Logf("%d packets captured, pattern visible: %v", captured, leak)
			if leak != tc.wantLeak {
				t.Fatalf("payload pattern visible on the underlay = %v, want %v (%d packets captured)", leak, tc.wantLeak, captured)
			}
		})
	}
}

func checkEncryptionStatus(t *testing.T, cl *cluster, encrypted bool) {
	t.Helper()
	conns, out, err := cl.connections(1)
	if err != nil {
		t.Fatalf("weave status connections: %v", err)
	}
	for _, c := range conns {
		if c.State != "established" {
			continue
		}
		if got := strings.HasPrefix(c.Info, "encrypted"); got != encrypted {
			t.Fatalf("connection info %q: encrypted=%v, want %v\n%s", c.Info, got, encrypted, out)
		}
		return
	}
	t.Fatalf("no established connection on h1:\n%s", out)
}

// captureDuringPing records weave's underlay traffic on every underlay bridge port
// while c1 pings c2 with the pattern, returning the pcap and packet count.
func captureDuringPing(t *testing.T, cl *cluster) ([]byte, int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "underlay.pcap")
	dump := cl.tp.Start(cl.tp.Underlay, "tcpdump", "-i", "any", "--immediate-mode", "-n", "-s", "0", "-U", "-Z", "root", "-w", file,
		"port 6783 or (ip[6:2] & 0x1fff != 0)")
	if err := dump.WaitStderr("listening on", 10*time.Second); err != nil {
		t.Fatalf("tcpdump did not start: %v", err)
	}
	out, err := netnstest.Ping(cl.container(1).NS, cl.container(2).IP(), 5, "-p", pingPattern, "-s", "200")
	if err != nil {
		t.Fatalf("pattern ping c1 -> c2: %v\n%s", err, out)
	}
	_ = dump.Stop(syscall.SIGINT)
	m := regexp.MustCompile(`(\d+) packets? captured`).FindStringSubmatch(dump.Stderr())
	if m == nil {
		t.Fatalf("tcpdump printed no capture count:\n%s", dump.Stderr())
	}
	n, _ := strconv.Atoi(m[1])
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read capture: %v", err)
	}
	return data, n
}

// (d) A peer with the wrong password is refused, and the dialling side's
// status says the connection failed and why.
func TestWrongPasswordRefused(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 2, passwords: []string{"right-password", "wrong-password"}})
	target := cl.host(1).IP + ":6783"
	netnstest.WaitFor(t, establishTimeout, "h2 reports the refused connection", func() error {
		conns, out, err := cl.connections(2)
		if err != nil {
			return err
		}
		for _, c := range conns {
			if c.Addr == target && c.State == "failed" && strings.TrimSpace(c.Info) != "" {
				t.Logf("h2 `weave status connections`:\n%s", out)
				return nil
			}
		}
		return fmt.Errorf("no `failed <reason>` line for %s:\n%s", target, out)
	})
	for _, i := range []int{1, 2} {
		if ok, out, _ := cl.establishedTo(i, 3-i); ok {
			t.Fatalf("h%d established a connection despite the password mismatch:\n%s", i, out)
		}
	}
	cl.pingFails(1, 2)
}

// (e) The first ping resolves ARP across the overlay (broadcast), and a
// UDP multicast group reaches receivers on two other hosts.
func TestBroadcastAndMulticast(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 3})
	cl.waitEstablished(2, 1)
	cl.waitEstablished(3, 1)
	c1, c2 := cl.container(1), cl.container(2)
	if err := netnstest.Exec(c1.NS, "ip", "neigh", "flush", "dev", "ethwe"); err != nil {
		t.Fatal(err)
	}
	cl.waitPing(1, 2)
	mac, err := netnstest.Output(c2.NS, "cat", "/sys/class/net/ethwe/address")
	if err != nil {
		t.Fatal(err)
	}
	neigh, err := netnstest.Output(c1.NS, "ip", "neigh", "show", c2.IP(), "dev", "ethwe")
	if err != nil || !strings.Contains(neigh, strings.TrimSpace(mac)) {
		t.Fatalf("c1's ARP entry for %s = %q (err %v), want lladdr %s", c2.IP(), neigh, err, mac)
	}
	cl.waitPing(1, 3) // ARP to c3 as well; the broadcast reached h3
	checkMulticast(t, cl)
}

func checkMulticast(t *testing.T, cl *cluster) {
	t.Helper()
	msg := "weave-mcast-" + cl.tp.Prefix
	var recvs []*netnstest.Proc
	for _, i := range []int{2, 3} {
		p := cl.tp.Start(cl.container(i).NS, helper("mcast"), "recv", "-msg", msg, "-timeout", "30s")
		if err := p.WaitStderr("joined", 10*time.Second); err != nil {
			t.Fatalf("multicast receiver in c%d: %v", i, err)
		}
		recvs = append(recvs, p)
	}
	cl.tp.Start(cl.container(1).NS, helper("mcast"), "send", "-msg", msg, "-count", "300", "-interval", "100ms")
	for n, p := range recvs {
		if err := p.Wait(35 * time.Second); err != nil {
			t.Fatalf("c%d did not receive the multicast message: %v\n%s", n+2, err, p.Stderr())
		}
	}
}

// (f) A stopped router, relaunched, rejoins: established again, ping works.
func TestStopAndRelaunchRejoins(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 2})
	cl.waitEstablished(1, 2)
	cl.waitPing(1, 2)
	cl.weave(2, "stop")
	netnstest.WaitFor(t, establishTimeout, "h1 notices h2 is gone", func() error {
		if ok, out, err := cl.establishedTo(1, 2); err != nil || ok {
			return fmt.Errorf("h1 still established to h2 (err %v):\n%s", err, out)
		}
		return nil
	})
	cl.pingFails(1, 2)
	cl.launch(2)
	cl.waitEstablished(1, 2)
	cl.waitEstablished(2, 1)
	cl.waitPing(1, 2)
}

// (g) `weave status peers` on every host lists every peer with its
// nickname.
func TestStatusPeersListsNicknames(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 3})
	for i := 1; i <= 3; i++ {
		netnstest.WaitFor(t, establishTimeout, fmt.Sprintf("h%d lists all peers", i), func() error {
			out, err := cl.tp.Weave(cl.host(i), "status", "peers")
			if err != nil {
				return err
			}
			for j := 1; j <= 3; j++ {
				if want := fmt.Sprintf("%s(h%d)", peerName(j), j); !strings.Contains(out, want) {
					return fmt.Errorf("missing %s in `weave status peers`:\n%s", want, out)
				}
			}
			return nil
		})
	}
}

// (h) Garbage on TCP and UDP 6783 neither crashes the routers nor wedges
// them: the same processes still run, still ping, and accept a new peer.
func TestGarbageDoesNotBreakRouters(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 3, noLaunch: []int{3}})
	cl.waitEstablished(2, 1)
	cl.waitPing(1, 2)
	before := map[int]string{}
	for _, i := range []int{1, 2} {
		before[i] = pids(t, cl.host(i).NS)
	}
	for n, i := range []int{1, 2} {
		out, err := netnstest.Output(cl.host(3).NS, helper("junk"), "-target", cl.host(i).IP+":6783", "-seed", fmt.Sprint(n+1))
		if err != nil {
			t.Fatalf("junk against h%d: %v\n%s", i, err, out)
		}
	}
	for _, i := range []int{1, 2} {
		if after := pids(t, cl.host(i).NS); after != before[i] {
			t.Fatalf("processes in h%d changed after garbage (router crashed?): before %q after %q", i, before[i], after)
		}
	}
	cl.waitEstablished(1, 2)
	cl.waitPing(1, 2)
	cl.launch(3)
	cl.attach(3)
	cl.waitEstablished(3, 1)
	cl.waitPing(3, 1)
}

// pids lists the processes in a namespace as one sorted string.
func pids(t *testing.T, ns string) string {
	t.Helper()
	list, err := netnstest.Pids(ns)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(list)
}
