package fastdp

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/weaveworks/mesh"
	"golang.org/x/sys/unix"
)

const nameC = mesh.PeerName(0xaa0000000003)

var macC = [6]byte{0x02, 0, 0, 0, 0, 0x03}

// v6Host is one "host" of an IPv6 (or mixed) underlay test: a namespace
// with the weave bridge, the router capture pair and one container.
type v6Host struct {
	ns, ctr string
	ctrIP   string // the container's overlay address
}

// newV6Host builds a host namespace (IPv6 enabled, no DAD wait) with a
// weave bridge, vethwe-bridge/vethwe-pcap and a container whose eth0 has
// mac, overlay address 10.32.0.<n>/24 and the given MTU.
func newV6Host(t *testing.T, n, mtu int) *v6Host {
	t.Helper()
	h := &v6Host{ctrIP: fmt.Sprintf("10.32.0.%d", n)}
	h.ns, _ = netnstest.NewNS(t)
	h.ctr, _ = netnstest.NewNS(t)
	sh(t, "ip", "netns", "exec", h.ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.disable_ipv6=0")
	nsh := func(args ...string) { sh(t, append([]string{"ip", "-n", h.ns}, args...)...) }
	nsh("link", "add", "weave", "mtu", fmt.Sprint(mtu), "type", "bridge")
	nsh("link", "set", "weave", "up")
	nsh("link", "add", "vethwe-bridge", "mtu", fmt.Sprint(mtu), "type", "veth", "peer", "vethwe-pcap", "mtu", fmt.Sprint(mtu))
	nsh("link", "set", "vethwe-bridge", "master", "weave", "up")
	nsh("link", "set", "vethwe-pcap", "up")
	nsh("link", "add", "vc", "mtu", fmt.Sprint(mtu), "type", "veth", "peer", "eth0", "mtu", fmt.Sprint(mtu), "netns", h.ctr)
	nsh("link", "set", "vc", "master", "weave", "up")
	sh(t, "ip", "netns", "exec", h.ctr, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
	sh(t, "ip", "-n", h.ctr, "link", "set", "eth0", "address", fmt.Sprintf("02:00:00:00:00:%02x", n), "up")
	sh(t, "ip", "-n", h.ctr, "addr", "add", h.ctrIP+"/24", "dev", "eth0")
	return h
}

// underlay joins a and b with a veth pair (name dev on both sides) of the
// given MTU carrying addresses addrA and addrB (prefix included).
func underlay(t *testing.T, a, b *v6Host, dev string, mtu int, addrA, addrB string) {
	t.Helper()
	sh(t, "ip", "-n", a.ns, "link", "add", dev, "mtu", fmt.Sprint(mtu), "type", "veth", "peer", dev, "mtu", fmt.Sprint(mtu), "netns", b.ns)
	for _, x := range []struct {
		ns, addr string
	}{{a.ns, addrA}, {b.ns, addrB}} {
		args := []string{"ip", "-n", x.ns, "addr", "add", x.addr, "dev", dev}
		if strings.Contains(x.addr, ":") {
			args = append(args, "nodad")
		}
		sh(t, args...)
		sh(t, "ip", "-n", x.ns, "link", "set", dev, "up")
	}
}

// neigh gives container from a static ARP entry for container to: the
// broadcasts are sleeve's job, not this test's.
func neigh(t *testing.T, from, to *v6Host, toMAC [6]byte) {
	t.Helper()
	sh(t, "ip", "-n", from.ctr, "neigh", "add", to.ctrIP, "lladdr", fmt.Sprintf("%x:%x:%x:%x:%x:%x", toMAC[0], toMAC[1], toMAC[2], toMAC[3], toMAC[4], toMAC[5]), "dev", "eth0")
}

// TestNetnsVXLANIPv6Underlay: two hosts joined only by IPv6. The devices
// are IPv6 VXLAN devices (local and FDB destination IPv6), heartbeats and
// acks verify the link at an MTU of 1500 - 70, a ping of exactly that size
// with DF crosses, and the kernel (not the router) carries the flow.
func TestNetnsVXLANIPv6Underlay(t *testing.T) {
	const mtu = 1500 - Overhead6
	ha, hb := newV6Host(t, 1, mtu), newV6Host(t, 2, mtu)
	underlay(t, ha, hb, "u0", 1500, "fd09::1/64", "fd09::2/64")
	neigh(t, ha, hb, macB)
	neigh(t, hb, ha, macA)
	a := newHostMTU(t, NewKernelIn("/var/run/netns/"+ha.ns), nameA, 1, "fd09::1", mtu)
	b := newHostMTU(t, NewKernelIn("/var/run/netns/"+hb.ns), nameB, 2, "fd09::2", mtu)
	ra := startMiniRouter(t, ha.ns, "vethwe-pcap", macB, macB)
	rb := startMiniRouter(t, hb.ns, "vethwe-pcap", macA, macA)
	fa, fb := connect(t, a, b, 61)
	await(t, "A verified", fa.EstablishedChannel())
	await(t, "B verified", fb.EstablishedChannel())
	ra.fwd.Store(fa)
	rb.fwd.Store(fb)

	link := sh(t, "ip", "-d", "-n", ha.ns, "link", "show", "vxw-002")
	for _, want := range []string{"vxlan id 4098", "local fd09::1", "dstport 6784", "nolearning", "master weave", fmt.Sprintf("mtu %d", mtu), " udpcsum"} {
		if !strings.Contains(link, want) {
			t.Errorf("vxw-002 lacks %q:\n%s", want, link)
		}
	}
	if fdb := sh(t, "bridge", "-n", ha.ns, "fdb", "show", "dev", "vxw-002"); !strings.Contains(fdb, "00:00:00:00:00:00 dst fd09::2 vni 8193 self permanent") {
		t.Errorf("IPv6 default fdb entry missing:\n%s", fdb)
	}
	st := a.o.Status()
	if len(st.Links) != 1 || st.Links[0].Local != "fd09::1" || st.Links[0].Remote != "fd09::2" || !st.Links[0].Usable {
		t.Fatalf("status = %+v", st)
	}

	out := ping(t, ha.ctr, hb.ctrIP, "-c", "5", "-i", "0.2")
	if !strings.Contains(out, " 5 received") || strings.Contains(out, "DUP!") {
		t.Fatalf("ping over IPv6 vxlan:\n%s", out)
	}
	// A full-size packet (IP 1430 = ICMP payload 1402) with DF: 70 bytes
	// of VXLAN over IPv6 make it exactly the 1500-byte underlay MTU.
	if out := ping(t, ha.ctr, hb.ctrIP, "-c", "2", "-i", "0.2", "-M", "do", "-s", fmt.Sprint(mtu-28)); !strings.Contains(out, " 2 received") {
		t.Fatalf("full-size ping over IPv6 vxlan:\n%s", out)
	}
	if n := ra.handed.Load(); n < 1 || n > 2 {
		t.Fatalf("router at A handled %d unicast frames, want 1..2 (then bridge-learned kernel path)", n)
	}
	if ra.watched.Load() != 0 || rb.watched.Load() != 0 {
		t.Fatalf("frames from the remote container reached the capture port: A %d, B %d", ra.watched.Load(), rb.watched.Load())
	}
	// The frames went over the IPv6 underlay as VXLAN datagrams.
	if s := sh(t, "ip", "netns", "exec", hb.ns, "cat", "/proc/net/snmp6"); udp6InDatagrams(t, s) == 0 {
		t.Fatalf("no UDP over IPv6 received on B:\n%s", s)
	}
}

func udp6InDatagrams(t *testing.T, snmp6 string) int {
	t.Helper()
	for _, l := range strings.Split(snmp6, "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == "Udp6InDatagrams" {
			var n int
			fmt.Sscan(f[1], &n)
			return n
		}
	}
	t.Fatalf("no Udp6InDatagrams in /proc/net/snmp6")
	return 0
}

// TestNetnsIPv6UnderlayIPv4MTUFallsBack: the IPv4 figure (1500 - 50) is
// 20 bytes too big for VXLAN over a 1500-byte IPv6 path. The full-size
// heartbeat is lost (the sending kernel does not fragment it) and the
// link stays on sleeve, saying so in IPv6 terms.
func TestNetnsIPv6UnderlayIPv4MTUFallsBack(t *testing.T) {
	ha, hb := newV6Host(t, 1, DefaultMTU), newV6Host(t, 2, DefaultMTU)
	underlay(t, ha, hb, "u0", 1500, "fd09::1/64", "fd09::2/64")
	a := newHostMTU(t, NewKernelIn("/var/run/netns/"+ha.ns), nameA, 1, "fd09::1", DefaultMTU)
	b := newHostMTU(t, NewKernelIn("/var/run/netns/"+hb.ns), nameB, 2, "fd09::2", DefaultMTU)
	fa, _ := connect(t, a, b, 62)
	want := fmt.Sprintf("MTU too small: full-size VXLAN probe (%d bytes, %d with IPv6 underlay headers) lost", 14+DefaultMTU, DefaultMTU+Overhead6)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(fa.FallbackReason(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("reason = %q, want %q", fa.FallbackReason(), want)
		}
		time.Sleep(10 * time.Millisecond) // the reason is re-evaluated on a timer
	}
	select {
	case <-fa.EstablishedChannel():
		t.Fatal("link verified although full-size frames cannot pass")
	default:
	}
}

// TestNetnsVXLANMixedFamilies: A has an IPv4 link to B and an IPv6 link to
// C at once. Both verify: the kernel keeps one VXLAN socket per family on
// port 6784, and each device sends from its own. A's containers reach
// both peers' over the kernel path.
func TestNetnsVXLANMixedFamilies(t *testing.T) {
	const mtu = 1500 - Overhead6 // one bridge MTU for the host: the IPv6 figure fits both
	ha, hb, hc := newV6Host(t, 1, mtu), newV6Host(t, 2, mtu), newV6Host(t, 3, mtu)
	underlay(t, ha, hb, "u4", 1500, "10.9.0.1/24", "10.9.0.2/24")
	underlay(t, ha, hc, "u6", 1500, "fd09::1/64", "fd09::3/64")
	neigh(t, ha, hb, macB)
	neigh(t, ha, hc, macC)
	neigh(t, hb, ha, macA)
	neigh(t, hc, ha, macA)
	a := newHostMTU(t, NewKernelIn("/var/run/netns/"+ha.ns), nameA, 1, "10.9.0.1", mtu)
	b := newHostMTU(t, NewKernelIn("/var/run/netns/"+hb.ns), nameB, 2, "10.9.0.2", mtu)
	c := newHostMTU(t, NewKernelIn("/var/run/netns/"+hc.ns), nameC, 3, "fd09::3", mtu)
	fab, fba := connect(t, a, b, 71)
	a.ip = net.ParseIP("fd09::1")
	fac, fca := connect(t, a, c, 72)
	for what, f := range map[string]*forwarder{"A->B": fab, "B->A": fba, "A->C": fac, "C->A": fca} {
		await(t, what+" verified", f.EstablishedChannel())
	}
	rab := startMiniRouter(t, ha.ns, "vethwe-pcap", macB, macB)
	rac := startMiniRouter(t, ha.ns, "vethwe-pcap", macC, macC)
	rb := startMiniRouter(t, hb.ns, "vethwe-pcap", macA, macA)
	rc := startMiniRouter(t, hc.ns, "vethwe-pcap", macA, macA)
	rab.fwd.Store(fab)
	rac.fwd.Store(fac)
	rb.fwd.Store(fba)
	rc.fwd.Store(fca)

	links := sh(t, "ip", "-d", "-n", ha.ns, "link", "show", "type", "vxlan")
	for _, want := range []string{"local 10.9.0.1", "local fd09::1"} {
		if !strings.Contains(links, want) {
			t.Errorf("A's vxlan devices lack %q:\n%s", want, links)
		}
	}
	for _, dst := range []*v6Host{hb, hc} {
		if out := ping(t, ha.ctr, dst.ctrIP, "-c", "3", "-i", "0.2", "-M", "do", "-s", fmt.Sprint(mtu-28)); !strings.Contains(out, " 3 received") {
			t.Fatalf("ping %s from A:\n%s", dst.ctrIP, out)
		}
	}
	if rb.watched.Load() != 0 || rc.watched.Load() != 0 {
		t.Fatalf("frames from A's container reached a capture port: B %d, C %d", rb.watched.Load(), rc.watched.Load())
	}
	st := a.o.Status()
	if len(st.Links) != 2 || st.Links[0].Remote != "10.9.0.2" || st.Links[1].Remote != "fd09::3" || !st.Links[0].Usable || !st.Links[1].Usable {
		t.Fatalf("status = %+v", st)
	}
}

// TestNetnsDetectUnderlay: the default MTU counts 70 bytes of VXLAN on an
// IPv6-only host or with an IPv6 --host, and 50 (as before IPv6) on an
// IPv4 or dual-stack host.
func TestNetnsDetectUnderlay(t *testing.T) {
	ns, path := netnstest.NewNS(t)
	sh(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.disable_ipv6=0")
	sh(t, "ip", "-n", ns, "link", "set", "lo", "up")
	sh(t, "ip", "-n", ns, "link", "add", "u0", "mtu", "1400", "type", "veth", "peer", "u0p", "mtu", "1400")
	sh(t, "ip", "-n", ns, "addr", "add", "fd09::1/64", "dev", "u0", "nodad")
	sh(t, "ip", "-n", ns, "link", "set", "u0", "up")
	sh(t, "ip", "-n", ns, "link", "set", "u0p", "up")
	detect := func(host string) (u Underlay) {
		t.Helper()
		if err := netns.Do(path, func() error { u = DetectUnderlay(host); return nil }); err != nil {
			t.Fatal(err)
		}
		return u
	}
	check := func(what, host string, want Underlay, wantMTU int) {
		t.Helper()
		if got := detect(host); got != want || got.OverlayMTU() != wantMTU {
			t.Errorf("%s (host %q): %+v, overlay MTU %d; want %+v, %d", what, host, got, got.OverlayMTU(), want, wantMTU)
		}
	}
	v6 := Underlay{MTU: 1400, Iface: "u0", IPv6: true}
	check("IPv6 only, no default route", "", v6, 1330)
	check("IPv6 --host", "fd09::1", v6, 1330)
	sh(t, "ip", "-n", ns, "-6", "route", "add", "default", "via", "fd09::fe", "dev", "u0")
	check("IPv6 only, IPv6 default route", "", v6, 1330)

	sh(t, "ip", "-n", ns, "addr", "add", "10.9.0.1/24", "dev", "u0")
	check("dual stack, no IPv4 default route: as before IPv6", "", Underlay{MTU: 1500}, 1450)
	sh(t, "ip", "-n", ns, "route", "add", "default", "via", "10.9.0.254", "dev", "u0")
	check("dual stack, IPv4 default route", "", Underlay{MTU: 1400, Iface: "u0"}, 1350)
	check("dual stack, IPv6 --host", "fd09::1", v6, 1330)
	check("dual stack, IPv4 --host", "10.9.0.1", Underlay{MTU: 1400, Iface: "u0"}, 1350)
}

// TestWithErrno: a kernel refusal keeps its errno (errors.Is) and names it,
// so the link's fallback reason says exactly what the kernel answered.
func TestWithErrno(t *testing.T) {
	err := withErrno(unix.EAFNOSUPPORT)
	if !errors.Is(err, unix.EAFNOSUPPORT) || !strings.HasSuffix(err.Error(), "(EAFNOSUPPORT)") {
		t.Fatalf("withErrno = %v", err)
	}
	if withErrno(nil) != nil {
		t.Fatal("withErrno(nil) != nil")
	}
	plain := errors.New("no errno")
	if withErrno(plain) != plain {
		t.Fatal("withErrno changed an error without errno")
	}
}
