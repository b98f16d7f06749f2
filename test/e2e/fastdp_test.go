//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// Two hosts on the VXLAN fast path: both ends name the vxlan overlay with
// the underlay-derived MTU (1500 - 50), containers ping, and weave stop
// leaves no VXLAN device behind.
func TestFastDPTwoHostsPing(t *testing.T) {
	t.Parallel()
	cl := newFastCluster(t, clusterOpts{hosts: 2})
	for _, p := range [][2]int{{1, 2}, {2, 1}} {
		st := cl.waitLink(p[0], p[1], "on vxlan", onVXLAN)
		if st.mtu != "1450" {
			t.Fatalf("h%d->h%d mtu = %s, want 1450", p[0], p[1], st.mtu)
		}
	}
	cl.waitPing(1, 2)
	cl.waitPing(2, 1)
	// The kernel carried the pings: h1's bridge learned c2 on a vxw port.
	if ok, fdb := cl.learnedOnVXLAN(1, cl.containerMAC(2)); !ok {
		t.Fatalf("h1 bridge did not learn c2 (%s) on a vxw port:\n%s", cl.containerMAC(2), fdb)
	}
	if devs := cl.vxlanDevices(1); !strings.Contains(devs, "vxw-") {
		t.Fatalf("no vxw device on h1:\n%s", devs)
	}
	cl.weave(1, "stop")
	if devs := cl.vxlanDevices(1); devs != "" {
		t.Fatalf("weave stop left VXLAN devices on h1:\n%s", devs)
	}
}

// Three hosts, full mesh on the fast path: every pair pings.
func TestFastDPThreeHostsPing(t *testing.T) {
	t.Parallel()
	cl := newFastCluster(t, clusterOpts{hosts: 3})
	for i := 1; i <= 3; i++ {
		for j := 1; j <= 3; j++ {
			if i != j {
				cl.waitLink(i, j, "on vxlan", onVXLAN)
			}
		}
	}
	for i := 1; i <= 3; i++ {
		for j := 1; j <= 3; j++ {
			if i != j {
				cl.waitPing(i, j)
			}
		}
	}
}

// UDP 6784 blocked into h2: the link falls back to sleeve on both ends
// with a reason in status, traffic continues; unblocked, it returns to
// vxlan.
func TestFastDPFallbackAndRecovery(t *testing.T) {
	t.Parallel()
	cl := newFastCluster(t, clusterOpts{hosts: 2})
	cl.waitLink(1, 2, "on vxlan", onVXLAN)
	cl.waitLink(2, 1, "on vxlan", onVXLAN)
	cl.waitPing(1, 2)

	cl.blockVXLAN(2, true)
	for _, p := range [][2]int{{1, 2}, {2, 1}} {
		st := cl.waitLink(p[0], p[1], "falls back to sleeve", func(st linkState) bool {
			return st.overlay == "sleeve" && strings.HasPrefix(st.fallback, "fastdp(")
		})
		t.Logf("h%d->h%d while blocked: fallback=%s", p[0], p[1], st.fallback)
	}
	cl.waitPing(1, 2)
	cl.waitPing(2, 1)

	cl.blockVXLAN(2, false)
	cl.waitLink(1, 2, "back on vxlan", onVXLAN)
	cl.waitLink(2, 1, "back on vxlan", onVXLAN)
	cl.waitPing(1, 2)
	cl.waitPing(2, 1)
}

// With a password the links are encrypted and stay on sleeve, and status
// says why.
func TestFastDPEncryptedUsesSleeve(t *testing.T) {
	t.Parallel()
	cl := newFastCluster(t, clusterOpts{hosts: 2, password: "s3cret"})
	for _, p := range [][2]int{{1, 2}, {2, 1}} {
		st := cl.waitLink(p[0], p[1], "encrypted sleeve", func(st linkState) bool { return st.overlay == "sleeve" })
		if !strings.Contains(st.fallback, "encryption required") {
			t.Fatalf("h%d->h%d fallback = %q, want the encryption reason", p[0], p[1], st.fallback)
		}
	}
	cl.waitPing(1, 2)
}

// h1<->h3 cut on the underlay: h1-h2 and h2-h3 run on vxlan and c1
// reaches c3 through h2, which relays over sleeve.
func TestFastDPMultiHop(t *testing.T) {
	t.Parallel()
	cl := newFastCluster(t, clusterOpts{hosts: 3, hub: 2, cut: [][2]int{{1, 3}}})
	cl.waitLink(1, 2, "on vxlan", onVXLAN)
	cl.waitLink(3, 2, "on vxlan", onVXLAN)
	cl.waitPing(1, 3)
	cl.waitPing(3, 1)
	cl.waitPing(1, 2)
}

var replyRE = regexp.MustCompile(`bytes from ([0-9.]+): icmp_seq=(\d+)`)

// Broadcast and multicast on a fast-path mesh: a broadcast ping from c1
// is answered exactly once by each of c2 and c3 (no duplicate delivery
// through both VXLAN and sleeve), and multicast reaches both.
func TestFastDPBroadcastExactlyOnce(t *testing.T) {
	t.Parallel()
	cl := newFastCluster(t, clusterOpts{hosts: 3})
	for _, j := range []int{2, 3} {
		cl.waitLink(1, j, "on vxlan", onVXLAN)
		cl.waitPing(1, j)
		if err := netnstest.Exec(cl.container(j).NS, "sysctl", "-qw", "net.ipv4.icmp_echo_ignore_broadcasts=0"); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := netnstest.Output(cl.container(1).NS, "ping", "-n", "-b", "-c", "5", "-i", "0.3", "-w", "4", "10.2.1.255")
	replies := map[string]int{} // "ip seq" -> count
	perHost := map[string]int{}
	for _, m := range replyRE.FindAllStringSubmatch(out, -1) {
		replies[m[1]+" "+m[2]]++
		perHost[m[1]]++
	}
	for k, n := range replies {
		if n != 1 {
			t.Fatalf("reply %s arrived %d times (duplicate delivery):\n%s", k, n, out)
		}
	}
	for _, j := range []int{2, 3} {
		if perHost[cl.container(j).IP()] < 4 {
			t.Fatalf("c%d answered %d of 5 broadcast pings:\n%s", j, perHost[cl.container(j).IP()], out)
		}
	}
	checkMulticast(t, cl)
}

// A crashed router leaves its VXLAN devices; `weave reset` removes them
// with the bridge.
func TestFastDPResetRemovesStaleDevices(t *testing.T) {
	t.Parallel()
	cl := newFastCluster(t, clusterOpts{hosts: 2})
	cl.waitLink(2, 1, "on vxlan", onVXLAN)
	pidText, err := os.ReadFile(filepath.Join(cl.host(2).RunDir, "weaver.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	netnstest.WaitFor(t, establishTimeout, "weaver on h2 gone", func() error {
		if err := syscall.Kill(pid, 0); err == nil {
			return fmt.Errorf("pid %d still alive", pid)
		}
		return nil
	})
	if devs := cl.vxlanDevices(2); !strings.Contains(devs, "vxw-") {
		t.Fatalf("expected the crashed router's vxw device on h2, got:\n%s", devs)
	}
	if out, err := cl.tp.Weave(cl.host(2), "reset", "--force"); err != nil {
		t.Fatalf("weave reset --force: %v\n%s", err, out)
	}
	if devs := cl.vxlanDevices(2); devs != "" {
		t.Fatalf("weave reset left VXLAN devices on h2:\n%s", devs)
	}
}
