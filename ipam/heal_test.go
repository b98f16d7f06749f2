package ipam

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

func isolate(n *memNet, p *Allocator, group int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if group == 0 {
		delete(n.group, p.cfg.OurName)
		return
	}
	n.group[p.cfg.OurName] = group
}

// holders maps every address held on any peer to the peers holding it.
func holders(t *testing.T, ps ...*Allocator) map[address.Address][]mesh.PeerName {
	t.Helper()
	out := map[address.Address][]mesh.PeerName{}
	for _, p := range ps {
		owned, err := p.Owned()
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range owned {
			for _, c := range cs {
				out[c.Addr] = append(out[c.Addr], p.cfg.OurName)
			}
		}
	}
	return out
}

// TestHealAfterTakeoverOfCutOffPeer: x is cut off and its space taken
// over by a (rmpeer, as --ipalloc-reclaim-after does) while x still holds
// addresses; both sides allocate meanwhile, and a also hands out one
// address x holds (claimed there explicitly: the range was full). After
// the heal x accepts the cluster's ring instead of refusing it, claims
// back every address it holds that a did not give out, and reports the
// one that a did (status, counter); nothing else is held twice, and all
// rings agree.
func TestHealAfterTakeoverOfCutOffPeer(t *testing.T) {
	n, a, b, x := threePeers(t, 21)
	var xHeld []address.CIDR
	for _, id := range []string{"x1", "x2", "x3"} {
		r := n.allocate(x, id, universe12)
		if r.err != nil {
			t.Fatal(r.err)
		}
		xHeld = append(xHeld, r.c)
	}
	isolate(n, x, 7)
	if _, err := a.AdminTakeoverRanges("p3"); err != nil {
		t.Fatal(err)
	}
	n.round(5e9)
	if o := ownerIn(b, xHeld[0].Addr); o != a.cfg.OurName {
		t.Fatalf("b sees %v owning x's space after the takeover, want a", o)
	}
	// Both sides allocate during the partition; a from its own space first.
	rx := n.allocate(x, "x4", universe12)
	ra := n.allocate(a, "a2", universe12)
	if rx.err != nil || ra.err != nil {
		t.Fatalf("allocations during the partition: x %v, a %v", rx.err, ra.err)
	}
	xHeld = append(xHeld, rx.c)
	if ownerIn(a, ra.c.Addr) == a.cfg.OurName && address.NewRange(xStart(x), 1<<18).Contains(ra.c.Addr) {
		t.Fatalf("a allocated %s from the space it took over while its own had room", ra.c)
	}
	// a gives out one of x's addresses (as when its own space is full).
	dup := xHeld[1]
	if err := a.Claim(context.Background(), "a-dup", dup, false); err != nil {
		t.Fatalf("a claims %s in the space it took over: %v", dup, err)
	}
	isolate(n, x, 0)
	for i := 0; i < 6; i++ {
		n.round(5e9)
	}
	for _, c := range xHeld {
		if c == dup {
			continue
		}
		for _, p := range []*Allocator{a, b, x} {
			if o := ownerIn(p, c.Addr); o != x.cfg.OurName {
				t.Errorf("%v sees %s owned by %v after the heal, want x (claimed back)", p.cfg.OurName, c, o)
			}
		}
	}
	st := x.Status()
	if len(st.Conflicts) != 1 || st.Conflicts[0].Addr != dup.Addr.String() || st.ConflictsSeen != 1 ||
		!strings.Contains(st.Problem, dup.Addr.String()) {
		t.Fatalf("x's status after the heal: conflicts %+v (seen %d), problem %q; want exactly %s", st.Conflicts, st.ConflictsSeen, st.Problem, dup.Addr)
	}
	for addr, hs := range holders(t, a, b, x) {
		if len(hs) > 1 && addr != dup.Addr {
			t.Errorf("%s held by %v after the heal", addr, hs)
		}
	}
	if ringSummaryOf(a) != ringSummaryOf(x) || ringSummaryOf(b) != ringSummaryOf(x) {
		t.Fatalf("rings disagree after the heal:\na %s\nb %s\nx %s", ringSummaryOf(a), ringSummaryOf(b), ringSummaryOf(x))
	}
	// x's container lets the address go: the conflict is over.
	if err := x.Delete("x2"); err != nil {
		t.Fatal(err)
	}
	n.round(5e9)
	if st := x.Status(); len(st.Conflicts) != 0 || st.Problem != "" {
		t.Fatalf("after x released %s: conflicts %+v, problem %q", dup, st.Conflicts, st.Problem)
	}
}

func ringSummaryOf(p *Allocator) string {
	var s string
	_ = p.do(func() { s = fmt.Sprint(p.ring.AllEntries()) })
	return s
}
