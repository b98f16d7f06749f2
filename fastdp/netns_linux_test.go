package fastdp

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/capture"
	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// nsTopo is two "hosts" joined by a veth underlay, each with a weave
// bridge, the router capture pair and one "container" namespace:
//
//	cA ── weave(hA) ─ vxw-002 ══ 10.9.0.1 ─ veth ─ 10.9.0.2 ══ vxw-001 ─ weave(hB) ── cB
type nsTopo struct {
	hA, hB, cA, cB string // namespace names
}

var (
	macA = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	macB = [6]byte{0x02, 0, 0, 0, 0, 0x02}
)

func sh(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func newNSTopo(t *testing.T, underlayMTU int) *nsTopo {
	t.Helper()
	tp := &nsTopo{}
	tp.hA, _ = netnstest.NewNS(t)
	tp.hB, _ = netnstest.NewNS(t)
	tp.cA, _ = netnstest.NewNS(t)
	tp.cB, _ = netnstest.NewNS(t)
	sh(t, "ip", "-n", tp.hA, "link", "add", "u0", "mtu", fmt.Sprint(underlayMTU), "type", "veth", "peer", "u0", "mtu", fmt.Sprint(underlayMTU), "netns", tp.hB)
	for i, h := range []struct{ host, ctr, ip, mac string }{
		{tp.hA, tp.cA, "10.32.0.1/24", "02:00:00:00:00:01"}, {tp.hB, tp.cB, "10.32.0.2/24", "02:00:00:00:00:02"},
	} {
		n := func(args ...string) { sh(t, append([]string{"ip", "-n", h.host}, args...)...) }
		n("addr", "add", fmt.Sprintf("10.9.0.%d/24", i+1), "dev", "u0")
		n("link", "set", "u0", "up")
		n("link", "add", "weave", "type", "bridge")
		n("link", "set", "weave", "up")
		n("link", "add", "vethwe-bridge", "type", "veth", "peer", "vethwe-pcap")
		n("link", "set", "vethwe-bridge", "master", "weave", "up")
		n("link", "set", "vethwe-pcap", "up")
		n("link", "add", "vc", "type", "veth", "peer", "eth0", "netns", h.ctr)
		n("link", "set", "vc", "master", "weave", "up")
		c := func(args ...string) { sh(t, append([]string{"ip", "-n", h.ctr}, args...)...) }
		sh(t, "ip", "netns", "exec", h.ctr, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
		c("link", "set", "eth0", "address", h.mac, "mtu", "1450", "up")
		c("addr", "add", h.ip, "dev", "eth0")
	}
	// Static ARP: broadcasts are the router's (sleeve's) job, not this test's.
	sh(t, "ip", "-n", tp.cA, "neigh", "add", "10.32.0.2", "lladdr", "02:00:00:00:00:02", "dev", "eth0")
	sh(t, "ip", "-n", tp.cB, "neigh", "add", "10.32.0.1", "lladdr", "02:00:00:00:00:01", "dev", "eth0")
	return tp
}

// miniRouter stands in for the router on one host: it reads the capture
// port and hands unicast frames for the peer to the forwarder, counting
// them and every frame whose source MAC is watched.
type miniRouter struct {
	h       *capture.Handle
	wg      sync.WaitGroup
	fwd     atomic.Pointer[forwarder]
	handed  atomic.Int64 // unicast frames given to Forward
	watched atomic.Int64 // frames seen with source MAC == watch
}

func startMiniRouter(t *testing.T, ns, iface string, dst, watch [6]byte) *miniRouter {
	t.Helper()
	r := &miniRouter{}
	err := netns.Do("/var/run/netns/"+ns, func() (err error) {
		r.h, err = capture.Open(iface)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		_ = r.h.Run(func(frame []byte) {
			if len(frame) < 14 {
				return
			}
			if [6]byte(frame[6:12]) == watch {
				r.watched.Add(1)
			}
			if [6]byte(frame[0:6]) == dst {
				r.handed.Add(1)
				if f := r.fwd.Load(); f != nil {
					_ = f.Forward(f.o.local, f.remote, frame)
				}
			}
		})
	}()
	t.Cleanup(func() {
		_ = r.h.Close()
		r.wg.Wait()
	})
	return r
}

func ping(t *testing.T, ns, dst string, extra ...string) string {
	t.Helper()
	args := append([]string{"ip", "netns", "exec", ns, "ping", "-n", "-W", "2"}, extra...)
	out, _ := exec.Command(append(args, dst)[0], append(args, dst)[1:]...).CombinedOutput()
	return string(out)
}

func TestNetnsVXLANPingAndIsolation(t *testing.T) {
	tp := newNSTopo(t, 1500)
	a := newHostWith(t, NewKernelIn("/var/run/netns/"+tp.hA), nameA, 1, "10.9.0.1")
	b := newHostWith(t, NewKernelIn("/var/run/netns/"+tp.hB), nameB, 2, "10.9.0.2")
	ra := startMiniRouter(t, tp.hA, "vethwe-pcap", macB, macB)
	rb := startMiniRouter(t, tp.hB, "vethwe-pcap", macA, macA)
	fa, fb := connect(t, a, b, 99)
	await(t, "A verified", fa.EstablishedChannel())
	await(t, "B verified", fb.EstablishedChannel())
	ra.fwd.Store(fa)
	rb.fwd.Store(fb)

	checkKernelState(t, tp.hA)
	out := ping(t, tp.cA, "10.32.0.2", "-c", "5", "-i", "0.2")
	if !strings.Contains(out, " 5 received") || strings.Contains(out, "DUP!") {
		t.Fatalf("ping over vxlan:\n%s", out)
	}
	// Only the first request needed the router; the rest stayed in the kernel.
	if n := ra.handed.Load(); n < 1 || n > 2 {
		t.Fatalf("router at A handled %d unicast frames, want 1..2 (then bridge-learned kernel path)", n)
	}
	// Isolation: nothing that arrived over VXLAN reached a router port.
	if ra.watched.Load() != 0 || rb.watched.Load() != 0 {
		t.Fatalf("frames from the remote container reached the capture port: A %d, B %d", ra.watched.Load(), rb.watched.Load())
	}
	// Broadcasts never leave through a vxw port (sleeve carries them):
	// B's container sees A's unicast pings but not A's broadcast ones.
	cb := startMiniRouter(t, tp.cB, "eth0", [6]byte{}, macA)
	_ = ping(t, tp.cA, "10.32.0.2", "-c", "1")
	if cb.watched.Load() == 0 {
		t.Fatal("B's container did not see A's unicast ping (capture broken?)")
	}
	before := cb.watched.Load()
	_ = ping(t, tp.cA, "10.32.0.255", "-b", "-c", "2", "-i", "0.2")
	if got := cb.watched.Load(); got != before {
		t.Fatalf("%d broadcast frames from A crossed VXLAN", got-before)
	}

	a.o.Stop()
	if out := sh(t, "ip", "-n", tp.hA, "-o", "link", "show", "type", "vxlan"); strings.TrimSpace(out) != "" {
		t.Fatalf("vxlan devices left after Stop:\n%s", out)
	}
}

// checkKernelState reads the device, port flags and FDB back from the kernel.
func checkKernelState(t *testing.T, ns string) {
	t.Helper()
	link := sh(t, "ip", "-d", "-n", ns, "link", "show", "vxw-002")
	for _, want := range []string{"vxlan id 4098", "local 10.9.0.1", "dstport 6784", "nolearning", "df set", "master weave", "mtu 1450"} {
		if !strings.Contains(link, want) {
			t.Errorf("vxw-002 lacks %q:\n%s", want, link)
		}
	}
	var ports []map[string]any
	if err := json.Unmarshal([]byte(sh(t, "ip", "netns", "exec", ns, "bridge", "-d", "-j", "link", "show", "dev", "vxw-002")), &ports); err != nil || len(ports) != 1 {
		t.Fatalf("bridge link json: %v %v", err, ports)
	}
	for k, want := range map[string]bool{"isolated": true, "learning": true, "flood": false, "mcast_flood": false, "bcast_flood": false} {
		if ports[0][k] != want {
			t.Errorf("vxw-002 %s = %v, want %v", k, ports[0][k], want)
		}
	}
	fdb := sh(t, "bridge", "-n", ns, "fdb", "show", "dev", "vxw-002")
	if !strings.Contains(fdb, "00:00:00:00:00:00 dst 10.9.0.2 vni 8193 self permanent") {
		t.Errorf("default fdb entry missing:\n%s", fdb)
	}
	if pcap := sh(t, "ip", "netns", "exec", ns, "bridge", "-d", "link", "show", "dev", "vethwe-bridge"); !strings.Contains(pcap, "isolated on") {
		t.Errorf("vethwe-bridge not isolated:\n%s", pcap)
	}
}

func TestNetnsSmallUnderlayMTUFallsBack(t *testing.T) {
	tp := newNSTopo(t, 1400)
	a := newHostWith(t, NewKernelIn("/var/run/netns/"+tp.hA), nameA, 1, "10.9.0.1")
	b := newHostWith(t, NewKernelIn("/var/run/netns/"+tp.hB), nameB, 2, "10.9.0.2")
	fa, _ := connect(t, a, b, 5)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(fa.FallbackReason(), "MTU too small") {
		if time.Now().After(deadline) {
			t.Fatalf("reason = %q, want MTU too small", fa.FallbackReason())
		}
		time.Sleep(10 * time.Millisecond) // the reason is re-evaluated on a timer
	}
	select {
	case <-fa.EstablishedChannel():
		t.Fatal("link verified although full-size frames cannot pass")
	default:
	}
}
