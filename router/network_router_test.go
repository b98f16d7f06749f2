package router

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/weaveworks/mesh"
)

const (
	us    = mesh.PeerName(0xaa0000000001)
	peerB = mesh.PeerName(0xaa0000000002)
	peerC = mesh.PeerName(0xaa0000000003)
)

var (
	macLocal  = MAC{0x02, 0, 0, 0, 0, 0x01}
	macRemote = MAC{0x02, 0, 0, 0, 0, 0x02}
	macBcast  = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

// testRouter is a router over one fake "sleeve" overlay with established
// forwarders to peerB and peerC, routes: B direct, C via B; broadcast from
// us goes to B and C, from B to C.
type testRouter struct {
	r    *NetworkRouter
	inj  *fakeInjector
	fwds map[mesh.PeerName]*fakeFwd
}

func newTestRouter(tb testing.TB) *testRouter {
	tb.Helper()
	ov := &fakeOverlay{name: "sleeve"}
	r := NewNetworkRouter(Config{}, ov)
	tb.Cleanup(r.Stop)
	tr := &testRouter{r: r, inj: &fakeInjector{record: true}, fwds: map[mesh.PeerName]*fakeFwd{}}
	var mu sync.Mutex
	var sent []sentMsg
	for _, p := range []mesh.PeerName{peerB, peerC} {
		params := connParams(map[string]string{"Overlays": "sleeve"}, &sent, &mu)
		params.RemotePeer = &mesh.Peer{Name: p}
		conn, err := r.sw.PrepareConnection(params)
		if err != nil {
			tb.Fatal(err)
		}
		conn.Confirm()
		f := ov.last()
		f.establish()
		<-conn.EstablishedChannel()
		tr.fwds[p] = f
	}
	r.startStatic(us, staticRoutes{
		unicast:   map[mesh.PeerName]mesh.PeerName{peerB: peerB, peerC: peerB},
		broadcast: map[mesh.PeerName][]mesh.PeerName{us: {peerB, peerC}, peerB: {peerC}},
	}, tr.inj)
	return tr
}

func ethFrame(dst, src MAC, etherType uint16, payload []byte) []byte {
	f := make([]byte, 14, 14+len(payload))
	copy(f[0:6], dst[:])
	copy(f[6:12], src[:])
	binary.BigEndian.PutUint16(f[12:14], etherType)
	return append(f, payload...)
}

func (tr *testRouter) counts() (b, c int64) {
	return tr.fwds[peerB].forwards.Load(), tr.fwds[peerC].forwards.Load()
}

func TestCapturedDropsRuntsAndSTP(t *testing.T) {
	tr := newTestRouter(t)
	tr.r.HandleCaptured(make([]byte, 13))
	tr.r.HandleCaptured(ethFrame(stpMAC, macLocal, 0x0026, []byte("bpdu")))
	if b, c := tr.counts(); b+c != 0 {
		t.Fatalf("forwards = %d/%d, want none", b, c)
	}
	if _, ok := tr.r.mac.Lookup(macLocal); ok {
		t.Fatal("STP frame's source MAC was learned")
	}
}

func TestCapturedUnicastAndBroadcast(t *testing.T) {
	tr := newTestRouter(t)
	// Unknown destination: flooded to B and C with dst = each hop.
	tr.r.HandleCaptured(ethFrame(macRemote, macLocal, 0x0800, []byte("x")))
	if b, c := tr.counts(); b != 1 || c != 1 {
		t.Fatalf("flood forwards = %d/%d, want 1/1", b, c)
	}
	if mesh.PeerName(tr.fwds[peerC].lastDst.Load()) != peerC || mesh.PeerName(tr.fwds[peerC].lastSrc.Load()) != us {
		t.Fatal("broadcast not addressed (us -> hop)")
	}
	// Remote MAC learned behind C (reached via B): unicast goes to B only,
	// addressed to C.
	tr.r.HandleForwarded(peerC, us, ethFrame(macLocal, macRemote, 0x0800, []byte("reply")))
	if n := tr.inj.count.Load(); n != 1 {
		t.Fatalf("injected %d frames, want 1", n)
	}
	tr.r.HandleCaptured(ethFrame(macRemote, macLocal, 0x0800, []byte("y")))
	if b, c := tr.counts(); b != 2 || c != 1 {
		t.Fatalf("unicast forwards = %d/%d, want 2/1", b, c)
	}
	if mesh.PeerName(tr.fwds[peerB].lastDst.Load()) != peerC {
		t.Fatal("unicast via B not addressed to C")
	}
	// Destination local: the bridge delivered it, nothing forwarded.
	tr.r.HandleCaptured(ethFrame(macLocal, MAC{0x02, 0, 0, 0, 0, 0x09}, 0x0800, nil))
	if b, c := tr.counts(); b != 2 || c != 1 {
		t.Fatalf("local frame forwarded: %d/%d", b, c)
	}
}

func TestCapturedLoopProtection(t *testing.T) {
	tr := newTestRouter(t)
	now := tr.r.cfg.Now()
	clock := &now
	tr.r.mac.now = func() time.Time { return *clock }
	tr.r.HandleForwarded(peerB, us, ethFrame(macBcast, macRemote, 0x0806, []byte("arp")))
	b0, c0 := tr.counts()
	// The injected broadcast loops back into our capture: dropped.
	tr.r.HandleCaptured(ethFrame(macBcast, macRemote, 0x0806, []byte("arp")))
	if b, c := tr.counts(); b != b0 || c != c0 {
		t.Fatal("looped frame was forwarded")
	}
	// After the grace period the container is taken to have moved here.
	*clock = clock.Add(DefaultMACMoveGrace + time.Second)
	tr.r.HandleCaptured(ethFrame(macBcast, macRemote, 0x0806, []byte("arp")))
	if p, _ := tr.r.mac.Lookup(macRemote); p != us {
		t.Fatalf("moved MAC owner = %v, want us", p)
	}
	if b, _ := tr.counts(); b != b0+1 {
		t.Fatal("frame from moved container not forwarded")
	}
}

func TestForwardedRelaysAndFloods(t *testing.T) {
	tr := newTestRouter(t)
	// Not for us: relayed towards C via B without injecting.
	tr.r.HandleForwarded(peerB, peerC, ethFrame(macRemote, macLocal, 0x0800, nil))
	if b, _ := tr.counts(); b != 1 || tr.inj.count.Load() != 0 {
		t.Fatalf("relay: forwards to B = %d, injected = %d", b, tr.inj.count.Load())
	}
	// Broadcast from B: injected and relayed along B's tree (to C).
	tr.r.HandleForwarded(peerB, us, ethFrame(macBcast, MAC{0x02, 0, 0, 0, 0, 0xbb}, 0x0806, nil))
	if b, c := tr.counts(); b != 1 || c != 1 || tr.inj.count.Load() != 1 {
		t.Fatalf("broadcast: forwards %d/%d injected %d", b, c, tr.inj.count.Load())
	}
	if mesh.PeerName(tr.fwds[peerC].lastSrc.Load()) != peerB {
		t.Fatal("relayed broadcast lost its source peer")
	}
	// Unicast to a local MAC: injected only.
	tr.r.HandleCaptured(ethFrame(macBcast, macLocal, 0x0806, nil)) // learn macLocal
	b0, c0 := tr.counts()
	tr.r.HandleForwarded(peerB, us, ethFrame(macLocal, MAC{0x02, 0, 0, 0, 0, 0xbb}, 0x0800, nil))
	if b, c := tr.counts(); b != b0 || c != c0 {
		t.Fatal("frame for a local MAC was relayed")
	}
	// Frames claiming to come from ourselves are ignored.
	n := tr.inj.count.Load()
	tr.r.HandleForwarded(us, us, ethFrame(macBcast, macRemote, 0x0806, nil))
	if tr.inj.count.Load() != n {
		t.Fatal("frame from ourself injected")
	}
}

func ipv4Frame(dst, src MAC, df bool, payloadLen int) []byte {
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 63, Protocol: layers.IPProtocolUDP,
		SrcIP: []byte{10, 40, 0, 1}, DstIP: []byte{10, 40, 0, 2}}
	if df {
		ip.Flags = layers.IPv4DontFragment
	}
	udp := &layers.UDP{SrcPort: 1234, DstPort: 5678}
	_ = udp.SetNetworkLayerForChecksum(ip)
	eth := &layers.Ethernet{SrcMAC: src[:], DstMAC: dst[:], EthernetType: layers.EthernetTypeIPv4}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, udp, gopacket.Payload(make([]byte, payloadLen))); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func TestFrameTooBigAnsweredWithICMP(t *testing.T) {
	tr := newTestRouter(t)
	tr.r.HandleForwarded(peerB, us, ethFrame(macLocal, macRemote, 0x0800, nil)) // learn remote behind B
	tr.inj.frames = nil
	tr.fwds[peerB].setErr(&FrameTooBigError{MTU: 1376})
	orig := ipv4Frame(macRemote, macLocal, true, 2000)
	tr.r.HandleCaptured(orig)
	got := tr.inj.all()
	if len(got) != 1 {
		t.Fatalf("injected %d frames, want 1 ICMP", len(got))
	}
	checkFragNeeded(t, got[0], orig, 1376)

	// Broadcast frames that are too big are just dropped.
	tr.fwds[peerC].setErr(&FrameTooBigError{MTU: 1376})
	tr.r.HandleCaptured(ipv4Frame(macBcast, macLocal, true, 2000))
	if n := len(tr.inj.all()); n != 1 {
		t.Fatalf("broadcast too-big frame produced ICMP (%d injected)", n)
	}
}
