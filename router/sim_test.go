package router_test

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/weaveworks/mesh"

	"github.com/seedf75a49c6/weave/router"
	"github.com/seedf75a49c6/weave/test/meshsim"
)

var (
	macA  = [6]byte{0x02, 0, 0, 0, 0, 0xa1}
	macB  = [6]byte{0x02, 0, 0, 0, 0, 0xb1}
	macC  = [6]byte{0x02, 0, 0, 0, 0, 0xc1}
	bcast = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

// frame builds an Ethernet frame with a marker payload.
func frame(dst, src [6]byte, etherType uint16, marker string) []byte {
	f := make([]byte, 14, 14+len(marker))
	copy(f[0:6], dst[:])
	copy(f[6:12], src[:])
	binary.BigEndian.PutUint16(f[12:14], etherType)
	return append(f, marker...)
}

func countFrames(frames [][]byte, want []byte) int {
	n := 0
	for _, f := range frames {
		if bytes.Equal(f, want) {
			n++
		}
	}
	return n
}

// hops returns the (From, To, Dst) of non-dropped deliveries of f.
func hops(s *meshsim.Sim, f []byte) [][3]mesh.PeerName {
	var out [][3]mesh.PeerName
	for _, d := range s.Net.Deliveries() {
		if !d.Dropped && bytes.Equal(d.Frame, f) {
			out = append(out, [3]mesh.PeerName{d.From, d.To, d.Dst})
		}
	}
	return out
}

func TestTwoPeersLearningAndFlooding(t *testing.T) {
	s := meshsim.New(t, 2, meshsim.Options{})
	p0, p1 := s.Peers[0], s.Peers[1]
	s.Connect(t, 0, 1)
	s.AwaitConverged(t)

	// ARP broadcast from A (behind p0) reaches p1 exactly once, never p0.
	arp := frame(bcast, macA, 0x0806, "arp who-has")
	p0.Router.HandleCaptured(arp)
	if n := countFrames(p1.Injector.Frames(), arp); n != 1 {
		t.Fatalf("ARP injected on p1 %d times, want 1", n)
	}
	if n := countFrames(p0.Injector.Frames(), arp); n != 0 {
		t.Fatalf("ARP injected back on p0 %d times", n)
	}

	// Unknown unicast from A to B floods to p1.
	unk := frame(macB, macA, 0x0800, "to unknown B")
	p0.Router.HandleCaptured(unk)
	if got := hops(s, unk); len(got) != 1 || got[0] != [3]mesh.PeerName{p0.Name, p1.Name, p1.Name} {
		t.Fatalf("unknown unicast hops = %v", got)
	}

	// B answers from p1: A was learned on p1 as behind p0, so it is unicast.
	reply := frame(macA, macB, 0x0800, "reply to A")
	p1.Router.HandleCaptured(reply)
	if n := countFrames(p0.Injector.Frames(), reply); n != 1 {
		t.Fatalf("reply injected on p0 %d times, want 1", n)
	}
	// p0 learned B behind p1; a frame to A's local neighbour stays local.
	local := frame(macA, [6]byte{0x02, 0, 0, 0, 0, 0xa2}, 0x0800, "local")
	p0.Router.HandleCaptured(local)
	if got := hops(s, local); len(got) != 0 {
		t.Fatalf("frame to a local MAC left the host: %v", got)
	}
	st := p0.Router.Status()
	if !hasMAC(st.MACs, "02:00:00:00:00:b1", p1.Name.String(), p1.NickName) {
		t.Fatalf("p0 status lacks B behind p1: %+v", st.MACs)
	}
	if _, ok := st.OverlayDiagnostics["sleeve"]; !ok {
		t.Fatalf("status lacks sleeve diagnostics: %+v", st.OverlayDiagnostics)
	}
}

func hasMAC(macs []router.MACStatus, mac, name, nick string) bool {
	for _, m := range macs {
		if m.Mac == mac && m.Name == name && m.NickName == nick && !m.LastSeen.IsZero() {
			return true
		}
	}
	return false
}

func macPresent(macs []router.MACStatus, mac string) bool {
	for _, m := range macs {
		if m.Mac == mac {
			return true
		}
	}
	return false
}

func TestUnicastGoesOnlyToTheRightPeer(t *testing.T) {
	s := meshsim.New(t, 3, meshsim.Options{})
	s.Connect(t, 0, 1)
	s.Connect(t, 0, 2)
	s.Connect(t, 1, 2)
	s.AwaitConverged(t)
	p0, p1, p2 := s.Peers[0], s.Peers[1], s.Peers[2]

	// Teach everyone that C lives behind p2.
	p2.Router.HandleCaptured(frame(bcast, macC, 0x0806, "C announces"))
	s.Net.ResetDeliveries()

	f := frame(macC, macA, 0x0800, "A to C")
	p0.Router.HandleCaptured(f)
	got := hops(s, f)
	if len(got) != 1 || got[0] != [3]mesh.PeerName{p0.Name, p2.Name, p2.Name} {
		t.Fatalf("hops = %v, want only p0->p2", got)
	}
	if n := countFrames(p1.Injector.Frames(), f); n != 0 {
		t.Fatalf("unicast frame injected on bystander p1")
	}
	if n := countFrames(p2.Injector.Frames(), f); n != 1 {
		t.Fatalf("unicast frame injected on p2 %d times, want 1", n)
	}
}

func TestLineTopologyRelays(t *testing.T) {
	s := meshsim.New(t, 3, meshsim.Options{})
	a, b, c := s.Peers[0], s.Peers[1], s.Peers[2]
	s.Connect(t, 0, 1)
	s.Connect(t, 1, 2)
	s.AwaitConverged(t)
	if _, ok := a.Mesh.Routes.Unicast(c.Name); !ok {
		t.Fatal("a has no route to c")
	}

	// Broadcast from a: injected on b and c once each, never back on a.
	bc := frame(bcast, macA, 0x0806, "a broadcasts")
	a.Router.HandleCaptured(bc)
	for _, p := range []*meshsim.Peer{b, c} {
		if n := countFrames(p.Injector.Frames(), bc); n != 1 {
			t.Fatalf("broadcast injected on %s %d times, want 1", p.NickName, n)
		}
	}
	if n := countFrames(a.Injector.Frames(), bc); n != 0 {
		t.Fatalf("broadcast came back to a %d times", n)
	}

	// Teach a that C is behind c, then send a unicast: relayed through b,
	// injected only on c.
	c.Router.HandleCaptured(frame(bcast, macC, 0x0806, "c announces"))
	s.Net.ResetDeliveries()
	b.Injector.Reset()
	uc := frame(macC, macA, 0x0800, "a to C")
	a.Router.HandleCaptured(uc)
	want := [][3]mesh.PeerName{{a.Name, b.Name, c.Name}, {b.Name, c.Name, c.Name}}
	got := hops(s, uc)
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("unicast hops = %v, want %v", got, want)
	}
	if n := countFrames(b.Injector.Frames(), uc); n != 0 {
		t.Fatal("relayed unicast injected on b")
	}
	if n := countFrames(c.Injector.Frames(), uc); n != 1 {
		t.Fatalf("unicast injected on c %d times, want 1", n)
	}
}

func TestCutLinkRemovesRouteAndPurgesMACs(t *testing.T) {
	s := meshsim.New(t, 2, meshsim.Options{})
	s.Connect(t, 0, 1)
	s.AwaitConverged(t)
	s.Peers[1].Router.HandleCaptured(frame(bcast, macB, 0x0806, "B announces"))
	if !hasMAC(s.Peers[0].Router.Status().MACs, "02:00:00:00:00:b1", s.Peers[1].Name.String(), s.Peers[1].NickName) {
		t.Fatal("p0 did not learn B")
	}
	s.Cut(0, 1)
	s.AwaitConverged(t) // now: no routes either way
	f := frame(bcast, macA, 0x0806, "after cut")
	s.Peers[0].Router.HandleCaptured(f)
	if n := countFrames(s.Peers[1].Injector.Frames(), f); n != 0 {
		t.Fatal("frame crossed a cut link")
	}
	// Once mesh garbage-collects the unreachable peer, its MACs go too.
	deadline := time.Now().Add(10 * time.Second)
	for macPresent(s.Peers[0].Router.Status().MACs, "02:00:00:00:00:b1") {
		if time.Now().After(deadline) {
			t.Fatalf("MACs of the removed peer not purged: %+v", s.Peers[0].Router.Status().MACs)
		}
		time.Sleep(20 * time.Millisecond) // polling: no GC event is exposed
	}
}

func TestControlMessagesCrossRealMesh(t *testing.T) {
	s := meshsim.New(t, 2, meshsim.Options{})
	p0, p1 := s.Peers[0], s.Peers[1]
	s.Connect(t, 0, 1)
	s.AwaitConverged(t)
	out := p0.Overlay.ForwarderTo(p1.Name)
	in := p1.Overlay.ForwarderTo(p0.Name)
	if out == nil || in == nil {
		t.Fatal("no fake forwarders")
	}
	if err := out.SendControl(3, []byte{0x05, 0x9e}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(in.Received()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("control message never arrived")
		}
		time.Sleep(5 * time.Millisecond) // polling: delivery is on mesh's goroutines
	}
	got := in.Received()
	if len(got) != 1 || got[0].Tag != 3 || !bytes.Equal(got[0].Msg, []byte{0x05, 0x9e}) {
		t.Fatalf("received %+v", got)
	}
	st := mesh.NewStatus(p0.Mesh)
	if len(st.Connections) != 1 || st.Connections[0].Attrs["name"] != "sleeve" {
		t.Fatalf("mesh connection status = %+v", st.Connections)
	}
}
