package ipam

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

// threePeers returns a ring split between peers 1, 2, 3 (3 being the one
// that will die), each with one allocation.
func threePeers(t *testing.T, seed uint64) (*memNet, *Allocator, *Allocator, *Allocator) {
	return threePeersWith(t, seed, nil)
}

func threePeersWith(t *testing.T, seed uint64, mutate func(*Config)) (*memNet, *Allocator, *Allocator, *Allocator) {
	n := newMemNet(t, seed)
	cfg := func(c *Config) {
		consensus(3)(c)
		if mutate != nil {
			mutate(c)
		}
	}
	a := n.addPeer(1, cfg)
	b := n.addPeer(2, cfg)
	x := n.addPeer(3, cfg)
	for i, p := range []*Allocator{a, b, x} {
		if r := n.allocate(p, string(rune('a'+i)), universe12); r.err != nil {
			t.Fatal(r.err)
		}
	}
	return n, a, b, x
}

func kill(n *memNet, p *Allocator) {
	p.Stop()
	n.mu.Lock()
	n.group[p.cfg.OurName] = 99
	n.mu.Unlock()
}

func owns(a *Allocator, addr address.Address) bool {
	var ok bool
	_ = a.do(func() { ok = a.space.Owns(addr) })
	return ok
}

func ownerIn(a *Allocator, addr address.Address) mesh.PeerName {
	var o mesh.PeerName
	_ = a.do(func() { o = a.ring.Owner(addr) })
	return o
}

func xStart(x *Allocator) address.Address {
	var s address.Address
	_ = x.do(func() { s = x.ring.OwnedRanges()[0].Start })
	return s
}

func TestRmpeerTakesOverAfterAck(t *testing.T) {
	n, a, b, x := threePeers(t, 11)
	xs := xStart(x)
	if _, err := a.AdminTakeoverRanges("p3"); !errors.Is(err, ErrPeerReachable) {
		t.Fatalf("rmpeer of a live peer: %v", err)
	}
	// x's share as a's ring has it: how the range was split among the
	// three depends on the order the donations ran in.
	var want address.Count
	_ = a.do(func() {
		for _, r := range a.ring.RangesOf(x.cfg.OurName) {
			want += address.Count(r.Size())
		}
	})
	if want == 0 {
		t.Fatal("x owns nothing in a's ring before its death")
	}
	kill(n, x)
	if n, err := a.AdminTakeoverRanges("nosuchpeer"); err != nil || n != 0 {
		t.Fatalf("rmpeer of unknown peer: %d %v, want 0 taken over as 2.8.1", n, err)
	}
	got, err := a.AdminTakeoverRanges("p3") // by nickname
	if err != nil || got != want {
		t.Fatalf("takeover: %d %v, want x's whole share %d", got, err, want)
	}
	n.round(5e9) // acknowledgements arrive within a tick
	if !owns(a, xs) || ownerIn(b, xs) != a.cfg.OurName {
		t.Fatalf("after ack: a owns %v, b sees owner %v", owns(a, xs), ownerIn(b, xs))
	}
	if st := a.Status(); st.Problem != "" {
		t.Fatalf("status problem after confirmation: %s", st.Problem)
	}
}

// TestConcurrentRmpeerNoDuplicates: rmpeer of the same dead peer on two
// partitioned hosts. Neither may use the space until the other has
// acknowledged; after the heal exactly one owns it.
func TestConcurrentRmpeerNoDuplicates(t *testing.T) {
	n, a, b, x := threePeers(t, 12)
	xs := xStart(x)
	kill(n, x)
	n.mu.Lock()
	n.group[a.cfg.OurName], n.group[b.cfg.OurName] = 1, 2
	n.mu.Unlock()
	if _, err := a.AdminTakeoverRanges(x.cfg.OurName.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AdminTakeoverRanges("p3"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		n.round(5e9)
	}
	if owns(a, xs) || owns(b, xs) {
		t.Fatalf("unacknowledged takeover is usable: a %v b %v", owns(a, xs), owns(b, xs))
	}
	if st := a.Status(); st.Problem == "" {
		t.Fatal("status does not say the takeover awaits acknowledgement")
	}
	n.mu.Lock()
	delete(n.group, a.cfg.OurName)
	delete(n.group, b.cfg.OurName)
	n.mu.Unlock()
	for i := 0; i < 3; i++ {
		n.round(5e9)
	}
	if owns(a, xs) == owns(b, xs) {
		t.Fatalf("after heal: a owns %v, b owns %v (want exactly one)", owns(a, xs), owns(b, xs))
	}
	if oa, ob := ownerIn(a, xs), ownerIn(b, xs); oa != ob {
		t.Fatalf("rings disagree on owner: %v vs %v", oa, ob)
	}
}

func TestShutdownHandsOver(t *testing.T) {
	n, a, b, x := threePeers(t, 13)
	as := xStart(a)
	_ = x
	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	n.pump()
	heir := ownerIn(b, as)
	if heir == a.cfg.OurName || heir == mesh.UnknownPeerName {
		t.Fatalf("a's space still owned by %v", heir)
	}
	if heir == b.cfg.OurName && !owns(b, as) {
		t.Fatal("heir b did not add the space")
	}
	if r := n.allocate(a, "late", universe12); !errors.Is(r.err, ErrShutdown) {
		t.Fatalf("allocate after shutdown: %v", r.err)
	}
}

// TestTentativeTakeoverSurvivesRestart: an unacknowledged takeover is
// persisted, so a restart does not make the space allocatable early.
func TestTentativeTakeoverSurvivesRestart(t *testing.T) {
	path := t.TempDir() + "/weavedata.db"
	s := openStore(t, path)
	n, a, b, x := threePeersWith(t, 14, func(c *Config) {
		if c.OurName == 0x0a0000000001 {
			c.Store = s
		}
	})
	xs := xStart(x)
	kill(n, x)
	n.mu.Lock()
	n.group[b.cfg.OurName] = 5 // b cannot acknowledge
	n.mu.Unlock()
	if _, err := a.AdminTakeoverRanges("p3"); err != nil {
		t.Fatal(err)
	}
	a.Stop()
	s.Close()
	s2 := openStore(t, path)
	defer s2.Close()
	n2 := newMemNet(t, 15)
	a2 := n2.addPeer(1, func(c *Config) { c.Store = s2 })
	if owns(a2, xs) {
		t.Fatal("unacknowledged takeover became allocatable after restart")
	}
	if p := a2.Status().Problem; !strings.Contains(p, "acknowledgement") {
		t.Fatalf("status problem %q", p)
	}
}

// TestRmpeerOfPeerHeldDead: mesh still lists p3 (IsKnownPeer), yet it is
// dead. While it is only about to be dropped rmpeer answers
// ErrPeerDropping (a caller retries within seconds, not 10 s); once the
// failure detector holds it dead and mesh no longer reaches it, rmpeer is
// accepted without waiting for mesh to forget it.
func TestRmpeerOfPeerHeldDead(t *testing.T) {
	var gone, dropping atomic.Bool
	n, a, b, x := threePeersWith(t, 16, func(c *Config) {
		c.IsKnownPeer = func(mesh.PeerName) bool { return true }
		c.PeerGone = func(p mesh.PeerName) bool { return p == 0x0a0000000003 && gone.Load() }
		c.PeerDropping = func(p mesh.PeerName) bool { return p == 0x0a0000000003 && dropping.Load() }
	})
	xs := xStart(x)
	if _, err := a.AdminTakeoverRanges("p3"); !errors.Is(err, ErrPeerReachable) {
		t.Fatalf("rmpeer of a live peer: %v, want ErrPeerReachable", err)
	}
	kill(n, x)
	dropping.Store(true)
	if _, err := a.AdminTakeoverRanges("p3"); !errors.Is(err, ErrPeerDropping) || !strings.Contains(err.Error(), "about to be dropped") {
		t.Fatalf("rmpeer of a peer about to be dropped: %v, want ErrPeerDropping", err)
	}
	gone.Store(true)
	if got, err := a.AdminTakeoverRanges("p3"); err != nil || got != 1<<20/4 {
		t.Fatalf("rmpeer of a peer held dead: %d %v", got, err)
	}
	n.round(5e9)
	if !owns(a, xs) || ownerIn(b, xs) != a.cfg.OurName {
		t.Fatalf("after ack: a owns %v, b sees owner %v", owns(a, xs), ownerIn(b, xs))
	}
}
