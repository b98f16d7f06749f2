package sleeve

import (
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/weaveworks/mesh"
)

// v6Hosts creates netns a, r and b (netnstest.Namespaces): a 1500-byte veth a-r
// (fd00:251:1::1 and ::2, also 192.168.252.1 and .2), a veth r-b of mtu
// (fd00:251:2::2 and ::1) and r forwarding IPv6 between them: A and B
// share no IPv4 path.
// With mtu < 1500, r answers A's bigger DF datagrams with ICMPv6 Packet
// Too Big, as an IPv6 router must (it never fragments).
func v6Hosts(t *testing.T, mtu string) (nsA, nsR, nsB string) {
	t.Helper()
	p, ns := netnstest.Namespaces(t, "a", "r", "b")
	nsA, nsR, nsB = ns[0], ns[1], ns[2]
	runCmd(t, "ip", "link", "add", p+"a", "mtu", "1500", "netns", nsA, "type", "veth", "peer", "name", p+"ra", "mtu", "1500", "netns", nsR)
	runCmd(t, "ip", "link", "add", p+"b", "mtu", mtu, "netns", nsB, "type", "veth", "peer", "name", p+"rb", "mtu", mtu, "netns", nsR)
	runCmd(t, "ip", "netns", "exec", nsR, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
	for _, a := range [][3]string{
		{nsA, p + "a", "fd00:251:1::1/64"}, {nsR, p + "ra", "fd00:251:1::2/64"},
		{nsR, p + "rb", "fd00:251:2::2/64"}, {nsB, p + "b", "fd00:251:2::1/64"},
	} {
		runCmd(t, "ip", "-n", a[0], "addr", "add", a[2], "dev", a[1], "nodad")
		runCmd(t, "ip", "-n", a[0], "link", "set", a[1], "up")
	}
	runCmd(t, "ip", "-n", nsA, "addr", "add", "192.168.252.1/24", "dev", p+"a")
	runCmd(t, "ip", "-n", nsR, "addr", "add", "192.168.252.2/24", "dev", p+"ra")
	runCmd(t, "ip", "-n", nsA, "-6", "route", "add", "fd00:251:2::/64", "via", "fd00:251:1::2")
	runCmd(t, "ip", "-n", nsB, "-6", "route", "add", "fd00:251:1::/64", "via", "fd00:251:2::2")
	return nsA, nsR, nsB
}

// v6Pair connects A (outbound, to B's IPv6 underlay address) and B, each
// bound as weaver binds by default (Host ""), so each has an IPv4 pair
// and the IPv6 pair beside it.
func v6Pair(t *testing.T, key *[32]byte, mtu string) netnsSetup {
	t.Helper()
	nsA, _, nsB := v6Hosts(t, mtu)
	hb := newFakeHandler()
	cfg := Config{Timing: fastTiming, NoSegments: true}
	oa := overlayInNetns(t, nsA, "", peerA, newFakeHandler(), cfg)
	ob := overlayInNetns(t, nsB, "", peerB, hb, cfg)
	if oa.socks6 == nil || ob.socks6 == nil {
		t.Fatal("no IPv6 sleeve socket on a host with IPv6")
	}
	fa, fb := pairFeatures(t, oa, ob, key, nil, nil)
	ap := netip.MustParseAddrPort("[fd00:251:2::1]:" + strconv.Itoa(ob.Port()))
	fa.(*forwarder).params.RemoteAddr = net.TCPAddrFromAddrPort(ap)
	fa.(*forwarder).remoteAddr.Store(&ap)
	return netnsSetup{oa: oa, ob: ob, fa: fa, fb: fb, hb: hb, nsA: nsA, nsB: nsB}
}

// TestNetnsIPv6Underlay: sleeve over an IPv6-only underlay, plain and
// encrypted: the link establishes, discovery settles 20 bytes below the
// IPv4 figure (the IPv6 header is 40 bytes, not 20), frames cross both
// ways and B learned A's IPv6 address from its heartbeats.
func TestNetnsIPv6Underlay(t *testing.T) {
	requireRoot(t)
	for _, tc := range linkCases {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			s := v6Pair(t, tc.key, "1500")
			s.fa.Confirm()
			s.fb.Confirm()
			awaitClosed(t, s.fa.EstablishedChannel(), "A established")
			awaitClosed(t, s.fb.EstablishedChannel(), "B established")
			awaitMTU(t, s.fa, tc.mtu-20)
			if err := s.fa.Forward(peerA, peerB, ipv4Frame(1000, true, 0)); err != nil {
				t.Fatalf("forward: %v", err)
			}
			if got := s.hb.await(t); got.src != peerA || len(got.frame) != ethHeaderLen+1000 {
				t.Fatalf("B got %v from %v, want a 1014-byte frame from A", len(got.frame), got.src)
			}
			if ap := s.fb.(*forwarder).remoteAddr.Load(); ap == nil || ap.Addr() != netip.MustParseAddr("fd00:251:1::1") {
				t.Fatalf("B's remote address for A = %v, want fd00:251:1::1", ap)
			}
			s.fa.Stop()
			s.fb.Stop()
		})
	}
}

// TestNetnsIPv6PacketTooBig: a router on the path whose next link has
// MTU 1280 answers A's DF probes with ICMPv6 Packet Too Big; A's kernel
// learns the path MTU, EMSGSIZE follows, and discovery settles at
// 1280 - 48 (IPv6+UDP) - 34 (sleeve framing and inner Ethernet header).
func TestNetnsIPv6PacketTooBig(t *testing.T) {
	requireRoot(t)
	checkGoroutines(t)
	s := v6Pair(t, nil, "1280")
	s.fa.Confirm()
	s.fb.Confirm()
	awaitClosed(t, s.fa.EstablishedChannel(), "A established")
	awaitMTU(t, s.fa, 1280-48-34)
	s.fa.Stop()
	s.fb.Stop()
}

// TestNetnsIPv6Disabled: with net.ipv6.conf.all.disable_ipv6=1 (2.8.1
// crashed on such hosts, weaveworks/weave#3873) the overlay still
// starts, and its IPv4 link works; a forward towards an IPv6 address
// fails as an error, not a crash.
func TestNetnsIPv6Disabled(t *testing.T) {
	requireRoot(t)
	checkGoroutines(t)
	nsA, nsB := twoHosts(t)
	for _, ns := range []string{nsA, nsB} {
		runCmd(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	hb := newFakeHandler()
	cfg := Config{Timing: fastTiming, NoSegments: true}
	oa := overlayInNetns(t, nsA, "", peerA, newFakeHandler(), cfg)
	ob := overlayInNetns(t, nsB, "", peerB, hb, cfg)
	fa, fb := pairFeatures(t, oa, ob, nil, nil, nil)
	ap := netip.MustParseAddrPort("192.168.251.2:" + strconv.Itoa(ob.Port()))
	fa.(*forwarder).remoteAddr.Store(&ap)
	fa.Confirm()
	fb.Confirm()
	awaitClosed(t, fa.EstablishedChannel(), "A established over IPv4")
	if err := fa.Forward(peerA, peerB, ipv4Frame(500, false, 0)); err != nil {
		t.Fatalf("forward: %v", err)
	}
	hb.await(t)
	v6 := netip.MustParseAddrPort("[fd00::9]:6783")
	fa.(*forwarder).remoteAddr.Store(&v6)
	f := fa.(*forwarder)
	f.nonDFCh.mu.Lock()
	err := f.writeLocked(&f.nonDFCh, []byte("x"))
	f.nonDFCh.mu.Unlock()
	if err == nil {
		t.Fatal("a send to an IPv6 address on a host without IPv6 succeeded")
	}
	fa.Stop()
	fb.Stop()
}

// TestNetnsMixedFamilies: one overlay (A, bound as weaver binds) with an
// IPv4 link to a peer that behaves as Weave 2.8.1 does (an IPv4-only
// socket, no features) and an IPv6 link to another: both establish,
// the IPv4 link settles at 2.8.1's MTU for a 1500-byte path, the IPv6
// one 20 bytes lower, and frames cross both.
func TestNetnsMixedFamilies(t *testing.T) {
	requireRoot(t)
	checkGoroutines(t)
	nsA, nsR, nsB := v6Hosts(t, "1500")
	hr, hb := newFakeHandler(), newFakeHandler()
	cfg := Config{Timing: fastTiming, NoSegments: true}
	oa := overlayInNetns(t, nsA, "", peerA, newFakeHandler(), cfg)
	oc := overlayInNetns(t, nsR, "192.168.252.2", peerC, hr, cfg) // like 2.8.1: udp4 only
	ob := overlayInNetns(t, nsB, "", peerB, hb, cfg)
	fr, frBack := pairFeatures(t, oa, oc, nil, nil, nil)
	v4 := netip.MustParseAddrPort("192.168.252.2:" + strconv.Itoa(oc.Port()))
	fr.(*forwarder).remoteAddr.Store(&v4)
	fb, fbBack := pairFeatures(t, oa, ob, nil, nil, nil)
	v6 := netip.MustParseAddrPort("[fd00:251:2::1]:" + strconv.Itoa(ob.Port()))
	fb.(*forwarder).remoteAddr.Store(&v6)
	for _, f := range []interface{ Confirm() }{fr, frBack, fb, fbBack} {
		f.Confirm()
	}
	awaitClosed(t, fr.EstablishedChannel(), "A established to the 2.8.1-like peer over IPv4")
	awaitClosed(t, fb.EstablishedChannel(), "A established to our peer over IPv6")
	awaitMTU(t, fr, 1438)
	awaitMTU(t, fb, 1418)
	for _, c := range []struct {
		f interface {
			Forward(src, dst mesh.PeerName, frame []byte) error
		}
		h  *fakeHandler
		to mesh.PeerName
	}{{fr, hr, peerC}, {fb, hb, peerB}} {
		if err := c.f.Forward(peerA, c.to, ipv4Frame(1200, false, 0)); err != nil {
			t.Fatalf("forward to %v: %v", c.to, err)
		}
		if got := c.h.await(t); got.src != peerA || len(got.frame) != ethHeaderLen+1200 {
			t.Fatalf("%v got a %d-byte frame from %v", c.to, len(got.frame), got.src)
		}
	}
	for _, f := range []interface{ Stop() }{fr, frBack, fb, fbBack} {
		f.Stop()
	}
}
