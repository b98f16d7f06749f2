package fastdp

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/testutil"
	"github.com/seedf75a49c6/weave/router"
	"github.com/weaveworks/mesh"
)

const (
	nameA = mesh.PeerName(0xaa0000000001)
	nameB = mesh.PeerName(0xaa0000000002)
)

type testHost struct {
	name  mesh.PeerName
	short mesh.PeerShortID
	ip    net.IP
	k     *fakeKernel
	o     *Overlay
}

func newTestHost(t *testing.T, n *fakeNet, name mesh.PeerName, short mesh.PeerShortID, ip string) *testHost {
	t.Helper()
	k := newFakeKernel(n)
	h := newHostWith(t, k, name, short, ip)
	h.k = k
	return h
}

func newHostWith(t *testing.T, k Kernel, name mesh.PeerName, short mesh.PeerShortID, ip string) *testHost {
	t.Helper()
	return newHostMTU(t, k, name, short, ip, 0)
}

// newHostMTU is newHostWith with a device MTU (0: the default 1450).
func newHostMTU(t *testing.T, k Kernel, name mesh.PeerName, short mesh.PeerShortID, ip string, mtu int) *testHost {
	t.Helper()
	h := &testHost{name: name, short: short, ip: net.ParseIP(ip)}
	o, err := New(Config{
		LocalShortID: func() mesh.PeerShortID { return short }, Kernel: k, MTU: mtu,
		HeartbeatInterval: 20 * time.Millisecond, FastHeartbeat: 5 * time.Millisecond, HeartbeatTimeout: 150 * time.Millisecond,
	}, name)
	if err != nil {
		t.Fatal(err)
	}
	h.o = o
	t.Cleanup(o.Stop)
	return h
}

// connect prepares and confirms a forwarder on each host, with control
// messages delivered to the other side.
func connect(t *testing.T, a, b *testHost, uid uint64) (fa, fb *forwarder) {
	t.Helper()
	var pa, pb router.Forwarder
	params := func(local, remote *testHost, out bool, peerFwd *router.Forwarder) mesh.OverlayConnectionParams {
		return mesh.OverlayConnectionParams{
			RemotePeer: peer(remote.name, remote.short),
			LocalAddr:  &net.TCPAddr{IP: local.ip, Port: 6783}, RemoteAddr: &net.TCPAddr{IP: remote.ip, Port: 40000},
			Outbound: out, ConnUID: uid,
			SendControlMessage: func(tag byte, msg []byte) error {
				(*peerFwd).ControlMessage(tag, msg)
				return nil
			},
		}
	}
	var err error
	if pa, err = a.o.PrepareConnection(params(a, b, true, &pb)); err != nil {
		t.Fatal(err)
	}
	if pb, err = b.o.PrepareConnection(params(b, a, false, &pa)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pa.Stop)
	t.Cleanup(pb.Stop)
	pa.Confirm()
	pb.Confirm()
	return pa.(*forwarder), pb.(*forwarder)
}

func peer(name mesh.PeerName, short mesh.PeerShortID) *mesh.Peer {
	p := &mesh.Peer{Name: name}
	p.ShortID, p.HasShortID = short, true
	return p
}

func await[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestDeviceNameAndVNI(t *testing.T) {
	if got := DeviceName(0x02a); got != "vxw-02a" {
		t.Fatalf("DeviceName = %s", got)
	}
	// Weave's tunnelIDFor: src | dst<<12.
	if got := VNI(0x001, 0x002); got != 0x002001 {
		t.Fatalf("VNI(1,2) = %#x", got)
	}
	if got := VNI(0xfff, 0xabc); got != 0xabcfff {
		t.Fatalf("VNI = %#x", got)
	}
}

func TestHeartbeatCodec(t *testing.T) {
	buf := make([]byte, 1464)
	putHeartbeat(buf, 0x0102030405060708)
	uid, n, err := parseHeartbeat(buf)
	if err != nil || uid != 0x0102030405060708 || n != 1464 {
		t.Fatalf("parse = %x %d %v", uid, n, err)
	}
	for _, bad := range [][]byte{buf[:20], buf[:100], append([]byte{1}, buf[1:]...)} {
		if _, _, err := parseHeartbeat(bad); err == nil {
			t.Fatalf("parsed a bad heartbeat of %d bytes", len(bad))
		}
	}
}

func FuzzParseHeartbeat(f *testing.F) {
	hb := make([]byte, smallHeartbeatLen)
	putHeartbeat(hb, 7)
	f.Add(hb)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, n, err := parseHeartbeat(b); err == nil && n != len(b) {
			t.Fatalf("accepted length %d for %d bytes", n, len(b))
		}
	})
}

// TestKernelStates checks the kernel state each step leaves, as commands.
func TestKernelStates(t *testing.T) {
	n := newFakeNet()
	a, b := newTestHost(t, n, nameA, 0x001, "10.0.0.1"), newTestHost(t, n, nameB, 0x002, "10.0.0.2")
	if got := a.k.take(); !slices.Equal(got, []string{"probe", "brport vethwe-bridge isolated true"}) {
		t.Fatalf("setup: %q", got)
	}
	b.k.take()
	fa, fb := connect(t, a, b, 42)
	await(t, "A established", fa.EstablishedChannel())
	await(t, "B established", fb.EstablishedChannel())
	want := []string{
		"link add vxw-002 type vxlan id 4098 local 10.0.0.1 dstport 6784 nolearning ttl 64 df set noudpcsum mtu 1450 master weave up",
		"brport vxw-002 isolated on learning off flood off mcast_flood off bcast_flood off",
		"fdb append 00:00:00:00:00:00 dev vxw-002 dst 10.0.0.2 vni 8193 self permanent",
		"brport vxw-002 isolated on learning on flood off mcast_flood off bcast_flood off",
	}
	if got := a.k.take(); !slices.Equal(got, want) {
		t.Fatalf("confirm+verify:\n got %q\nwant %q", got, want)
	}
	n.block(fa.spec.VNI, true) // nothing reaches A over VXLAN
	if h := await(t, "A on hold", fa.HealthChannel()); h {
		t.Fatal("A health true while blocked")
	}
	if got := a.k.take(); !slices.Equal(got, []string{"brport vxw-002 isolated on learning off flood off mcast_flood off bcast_flood off flush"}) {
		t.Fatalf("hold: %q", got)
	}
	n.block(fa.spec.VNI, false)
	if h := await(t, "A healthy", fa.HealthChannel()); !h {
		t.Fatal("A health false after unblock")
	}
	a.k.take()
	a.o.Stop()
	if got := a.k.take(); !slices.Equal(got, []string{"link del vxw-002", "brport vethwe-bridge isolated false"}) {
		t.Fatalf("stop: %q", got)
	}
	if l, _ := a.k.Links(DevicePrefix); len(l) != 0 {
		t.Fatalf("links left after Stop: %v", l)
	}
}

func TestForwardCarriesOnlyOwnUnicast(t *testing.T) {
	n := newFakeNet()
	a, b := newTestHost(t, n, nameA, 1, "10.0.0.1"), newTestHost(t, n, nameB, 2, "10.0.0.2")
	fa, _ := connect(t, a, b, 7)
	uni := make([]byte, 100)
	uni[0], uni[6] = 0x02, 0x02
	if err := fa.Forward(nameA, nameB, uni); !errors.Is(err, router.ErrCannotForward) {
		t.Fatalf("Forward before verification = %v", err)
	}
	await(t, "A established", fa.EstablishedChannel())
	if err := fa.Forward(nameA, nameB, uni); err != nil {
		t.Fatalf("unicast Forward = %v", err)
	}
	if got := a.k.dataFrames("vxw-002"); got != 1 {
		t.Fatalf("data frames written = %d, want 1", got)
	}
	bcast := append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uni[6:]...)
	relay := mesh.PeerName(0xaa0000000009)
	for _, c := range []struct {
		what     string
		src, dst mesh.PeerName
		frame    []byte
	}{{"broadcast", nameA, nameB, bcast}, {"relayed", relay, nameB, uni}, {"beyond peer", nameA, relay, uni}} {
		if err := fa.Forward(c.src, c.dst, c.frame); !errors.Is(err, router.ErrCannotForward) {
			t.Fatalf("%s: Forward = %v, want ErrCannotForward", c.what, err)
		}
	}
	big := make([]byte, 14+1451)
	big[0], big[12], big[13], big[20] = 0x02, 0x08, 0x00, 0x40
	var tooBig *router.FrameTooBigError
	if err := fa.Forward(nameA, nameB, big); !errors.As(err, &tooBig) || tooBig.MTU != 1450 {
		t.Fatalf("oversized DF frame: %v", err)
	}
	big[20] = 0
	if err := fa.Forward(nameA, nameB, big); !errors.Is(err, router.ErrCannotForward) {
		t.Fatalf("oversized non-DF frame: %v", err)
	}
	if got := a.k.dataFrames("vxw-002"); got != 1 {
		t.Fatalf("data frames written = %d, want still 1", got)
	}
}

func TestMTUTooSmallIsDiagnosed(t *testing.T) {
	n := newFakeNet()
	n.setMaxFrame(1000)
	a, b := newTestHost(t, n, nameA, 1, "10.0.0.1"), newTestHost(t, n, nameB, 2, "10.0.0.2")
	fa, _ := connect(t, a, b, 7)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(fa.FallbackReason(), "MTU too small") {
		if time.Now().After(deadline) {
			t.Fatalf("reason = %q", fa.FallbackReason())
		}
		time.Sleep(5 * time.Millisecond) // the reason changes on a timer; no event to await
	}
	select {
	case <-fa.EstablishedChannel():
		t.Fatal("established although full-size heartbeats are lost")
	default:
	}
}

func TestEncryptedOrDisabledLinksRefused(t *testing.T) {
	n := newFakeNet()
	a := newTestHost(t, n, nameA, 1, "10.0.0.1")
	p := mesh.OverlayConnectionParams{RemotePeer: peer(nameB, 2), SessionKey: new([32]byte),
		LocalAddr: &net.TCPAddr{IP: net.ParseIP("10.0.0.1")}, RemoteAddr: &net.TCPAddr{IP: net.ParseIP("10.0.0.2")}}
	if _, err := a.o.PrepareConnection(p); !errors.Is(err, ErrEncryptionRequired) {
		t.Fatalf("encrypted: %v", err)
	}
	p.SessionKey = nil
	for _, c := range []struct{ local, remote, want string }{
		{"fd00::1", "10.0.0.2", "one underlay family"},
		{"fe80::1", "fe80::2", "link-local IPv6 underlay is not supported"},
	} {
		p.LocalAddr.IP, p.RemoteAddr.IP = net.ParseIP(c.local), net.ParseIP(c.remote)
		if _, err := a.o.PrepareConnection(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("underlay %s -> %s: %v, want %q", c.local, c.remote, err, c.want)
		}
	}

	k := newFakeKernel(n)
	k.probeErr = errors.New("operation not supported")
	o, err := New(Config{LocalShortID: func() mesh.PeerShortID { return 3 }, Kernel: k}, nameA)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Stop()
	if o.Disabled() == nil || o.Status().Enabled {
		t.Fatal("overlay enabled although the probe failed")
	}
	p.LocalAddr.IP = net.ParseIP("10.0.0.1")
	if _, err := o.PrepareConnection(p); err == nil || !strings.Contains(err.Error(), "operation not supported") {
		t.Fatalf("disabled overlay prepared a connection: %v", err)
	}
}

func TestNewerConnectionSupersedes(t *testing.T) {
	n := newFakeNet()
	a, b := newTestHost(t, n, nameA, 1, "10.0.0.1"), newTestHost(t, n, nameB, 2, "10.0.0.2")
	old, oldB := connect(t, a, b, 7)
	await(t, "old established", old.EstablishedChannel())
	oldB.Stop()
	fa, _ := connect(t, a, b, 8)
	await(t, "new established", fa.EstablishedChannel())
	if !strings.Contains(old.FallbackReason(), "superseded") {
		t.Fatalf("old reason = %q", old.FallbackReason())
	}
	old.Stop()
	if l, _ := a.k.Links(DevicePrefix); !slices.Equal(l, []string{"vxw-002"}) {
		t.Fatalf("links after stopping the superseded forwarder: %v", l)
	}
	if st := a.o.Status(); len(st.Links) != 1 || !st.Links[0].Usable || st.Links[0].VNITx != VNI(1, 2) {
		t.Fatalf("status = %+v", st)
	}
}

func TestStopIsIdempotentAndJoinsGoroutines(t *testing.T) {
	testutil.CheckGoroutines(t, 5*time.Second)
	n := newFakeNet()
	a, b := newTestHost(t, n, nameA, 1, "10.0.0.1"), newTestHost(t, n, nameB, 2, "10.0.0.2")
	fa, fb := connect(t, a, b, 3)
	await(t, "A established", fa.EstablishedChannel())
	fa.Stop()
	fa.Stop()
	a.o.Stop()
	a.o.Stop()
	fb.Stop()
	b.o.Stop()
	if _, err := a.o.PrepareConnection(mesh.OverlayConnectionParams{RemotePeer: peer(nameB, 2),
		LocalAddr: &net.TCPAddr{IP: a.ip}, RemoteAddr: &net.TCPAddr{IP: b.ip}}); err == nil {
		t.Fatal("stopped overlay prepared a connection")
	}
}

// TestHeartbeatRTT: a verified link reports its heartbeat round trip.
func TestHeartbeatRTT(t *testing.T) {
	n := newFakeNet()
	a, b := newTestHost(t, n, nameA, 1, "10.0.0.1"), newTestHost(t, n, nameB, 2, "10.0.0.2")
	fa, _ := connect(t, a, b, 5)
	await(t, "established", fa.EstablishedChannel())
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := a.o.Status()
		if len(st.Links) == 1 && st.Links[0].RTT > 0 && st.Links[0].RTT < time.Second {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heartbeat RTT: %+v", st)
		}
		time.Sleep(10 * time.Millisecond) // polling: the RTT comes with the next ack
	}
}

// TestKernelStatesIPv6: over an IPv6 underlay the device takes an IPv6
// local address (no DF, UDP checksums on), the FDB entry an IPv6
// destination, and the VNIs are those of IPv4 links. An IPv4-mapped
// address (a dual-stack listener's view of an IPv4 peer) is IPv4.
func TestKernelStatesIPv6(t *testing.T) {
	n := newFakeNet()
	a := newHostMTU(t, newFakeKernel(n), nameA, 1, "fd00::1", 1430)
	b := newHostMTU(t, newFakeKernel(n), nameB, 2, "fd00::2", 1430)
	a.k, b.k = a.o.k.(*fakeKernel), b.o.k.(*fakeKernel)
	a.k.take()
	fa, fb := connect(t, a, b, 42)
	await(t, "A established", fa.EstablishedChannel())
	await(t, "B established", fb.EstablishedChannel())
	want := []string{
		"link add vxw-002 type vxlan id 4098 local fd00::1 dstport 6784 nolearning ttl 64 udpcsum mtu 1430 master weave up",
		"brport vxw-002 isolated on learning off flood off mcast_flood off bcast_flood off",
		"fdb append 00:00:00:00:00:00 dev vxw-002 dst fd00::2 vni 8193 self permanent",
		"brport vxw-002 isolated on learning on flood off mcast_flood off bcast_flood off",
	}
	if got := a.k.take(); !slices.Equal(got, want) {
		t.Fatalf("confirm+verify:\n got %q\nwant %q", got, want)
	}
	if st := a.o.Status(); len(st.Links) != 1 || st.Links[0].Local != "fd00::1" || st.Links[0].Remote != "fd00::2" {
		t.Fatalf("status = %+v", st)
	}

	c := newHostMTU(t, newFakeKernel(n), 0xaa0000000003, 3, "::ffff:10.0.0.3", 0)
	d := newHostMTU(t, newFakeKernel(n), 0xaa0000000004, 4, "::ffff:10.0.0.4", 0)
	fc, _ := connect(t, c, d, 43)
	if fc.spec.Local.String() != "10.0.0.3" || fc.fdb.Dst.String() != "10.0.0.4" || fc.ipv6 {
		t.Fatalf("IPv4-mapped underlay: local %s, dst %s, ipv6 %v", fc.spec.Local, fc.fdb.Dst, fc.ipv6)
	}
}

// TestMTUTooSmallIsDiagnosedIPv6: over IPv6 the reason gives the outer
// size, 70 bytes above the MTU.
func TestMTUTooSmallIsDiagnosedIPv6(t *testing.T) {
	n := newFakeNet()
	n.setMaxFrame(1000)
	a := newHostMTU(t, newFakeKernel(n), nameA, 1, "fd00::1", 0)
	b := newHostMTU(t, newFakeKernel(n), nameB, 2, "fd00::2", 0)
	fa, _ := connect(t, a, b, 7)
	want := "MTU too small: full-size VXLAN probe (1464 bytes, 1520 with IPv6 underlay headers) lost, small ones pass"
	deadline := time.Now().Add(10 * time.Second)
	for fa.FallbackReason() != want {
		if time.Now().After(deadline) {
			t.Fatalf("reason = %q, want %q", fa.FallbackReason(), want)
		}
		time.Sleep(5 * time.Millisecond) // the reason changes on a timer; no event to await
	}
}

func TestOverheadFor(t *testing.T) {
	for addr, want := range map[string]int{"10.0.0.1": 50, "::ffff:10.0.0.1": 50, "fd00::1": 70} {
		if got := OverheadFor(netip.MustParseAddr(addr)); got != want {
			t.Errorf("OverheadFor(%s) = %d, want %d", addr, got, want)
		}
	}
}

// TestKernelRefusalIsTheReason: a kernel that refuses the IPv6 device (the
// IPv4 one still works) fails that link's forwarder with the refusal,
// which becomes the fallback reason the switch shows.
func TestKernelRefusalIsTheReason(t *testing.T) {
	n := newFakeNet()
	ka := newFakeKernel(n)
	ka.addErr = func(s VXLANSpec) error {
		if s.Local.Is6() {
			return errors.New("create vxlan device vxw-002: address family not supported by protocol (EAFNOSUPPORT)")
		}
		return nil
	}
	a := newHostMTU(t, ka, nameA, 1, "fd00::1", 0)
	b := newHostMTU(t, newFakeKernel(n), nameB, 2, "fd00::2", 0)
	fa, _ := connect(t, a, b, 9)
	err := await(t, "A's forwarder error", fa.ErrorChannel())
	if !strings.Contains(err.Error(), "(EAFNOSUPPORT)") || fa.FallbackReason() != err.Error() {
		t.Fatalf("error %v, reason %q", err, fa.FallbackReason())
	}
}
