package ipam

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

// uniqueness tracks every live allocation across all peers and fails on
// the first address handed to two containers.
type uniqueness struct {
	t      *testing.T
	holder map[address.Address]string
}

func (u *uniqueness) add(peer *Allocator, ident string, a address.Address) {
	u.t.Helper()
	if h, ok := u.holder[a]; ok {
		u.t.Fatalf("DUPLICATE: %s given to %s on %s, already held by %s", a, ident, peer.cfg.OurNickname, h)
	}
	u.holder[a] = fmt.Sprintf("%s@%s", ident, peer.cfg.OurNickname)
}

// checkConverged: after a heal every replica holds the same ring, every
// allocated address lies in space its peer owns, and no address is held twice.
func checkConverged(t *testing.T, n *memNet) {
	t.Helper()
	var first string
	seen := map[address.Address]mesh.PeerName{}
	for _, p := range n.order {
		a := n.peers[p]
		var entries, problem string
		var alloc []address.Address
		_ = a.do(func() {
			r := a.ring.Clone()
			r.Peer = 0
			entries = fmt.Sprint(r.AllEntries())
			alloc = a.space.Allocated()
			for _, x := range alloc {
				if o := a.ring.Owner(x); o != p {
					problem = fmt.Sprintf("%s allocated %s owned by %s", p, x, o)
				}
			}
		})
		if problem != "" {
			t.Fatal(problem)
		}
		if first == "" {
			first = entries
		} else if entries != first {
			t.Fatalf("rings differ after heal:\n%s\n%s", first, entries)
		}
		for _, x := range alloc {
			if q, dup := seen[x]; dup {
				t.Fatalf("DUPLICATE after heal: %s on %s and %s", x, q, p)
			}
			seen[x] = p
		}
	}
}

// TestManyAllocationsWithPartitions: 5 peers, a /22 (so peers must ask each
// other for space), lossy gossip, random partitions and heals; >= 1000
// successful allocations with churn, and no address is ever duplicated.
func TestManyAllocationsWithPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("long multi-peer run; skipped with -short")
	}
	const peers = 5
	n := newMemNet(t, 42)
	subnet := address.MustParseCIDR("10.9.0.0/22")
	var as []*Allocator
	for i := 1; i <= peers; i++ {
		as = append(as, n.addPeer(i, func(c *Config) {
			c.Universe, c.DefaultSubnet = subnet, subnet
			c.Init = Init{Mode: InitConsensus, Quorum: peers/2 + 1}
			c.SpaceTimeout = 30e9
		}))
	}
	rnd := rand.New(rand.NewPCG(9, 9))
	u := &uniqueness{t: t, holder: map[address.Address]string{}}
	type live struct {
		peer  *Allocator
		ident string
		addr  address.Address
	}
	var lives []live
	ok, failed, seq := 0, 0, 0
	n.loss = 0.05
	for ok < 1000 && seq < 4000 {
		seq++
		switch x := rnd.IntN(100); {
		case x < 4: // partition into two random groups
			n.mu.Lock()
			for _, p := range n.order {
				n.group[p] = rnd.IntN(2)
			}
			n.mu.Unlock()
		case x < 8: // heal
			n.mu.Lock()
			clear(n.group)
			n.mu.Unlock()
		case x < 30 && len(lives) > 0: // release one
			i := rnd.IntN(len(lives))
			l := lives[i]
			if err := l.peer.Free(l.ident, l.addr); err != nil {
				t.Fatalf("free %s: %v", l.ident, err)
			}
			delete(u.holder, l.addr)
			lives = slices.Delete(lives, i, i+1)
		default:
			a := as[rnd.IntN(peers)]
			ident := fmt.Sprintf("c%d", seq)
			r := n.allocate(a, ident, subnet)
			if r.err != nil {
				failed++
				continue
			}
			u.add(a, ident, r.c.Addr)
			lives = append(lives, live{a, ident, r.c.Addr})
			ok++
		}
	}
	n.loss = 0
	n.mu.Lock()
	clear(n.group)
	n.mu.Unlock()
	for i := 0; i < 3; i++ {
		n.round(5e9)
	}
	checkConverged(t, n)
	t.Logf("%d allocations succeeded, %d failed with a bounded error, %d live at the end", ok, failed, len(lives))
	if ok < 1000 {
		t.Fatalf("only %d successful allocations", ok)
	}
}

// TestPartitionDuringConsensus: with 5 electors (quorum 3) split 2/3 before
// any ring exists, the minority fails with a bounded, explanatory error,
// the majority builds the ring, and after the heal the minority joins it.
func TestPartitionDuringConsensus(t *testing.T) {
	n := newMemNet(t, 77)
	var as []*Allocator
	for i := 1; i <= 5; i++ {
		as = append(as, n.addPeer(i, consensus(5)))
	}
	n.mu.Lock()
	n.group[as[0].cfg.OurName], n.group[as[1].cfg.OurName] = 1, 1
	n.mu.Unlock()
	minority := n.allocate(as[0], "m", universe12)
	if !errors.Is(minority.err, ErrNoConsensus) || !strings.Contains(minority.err.Error(), "quorum: 3, known: 2") {
		t.Fatalf("minority allocation: %v %v", minority.c, minority.err)
	}
	u := &uniqueness{t: t, holder: map[address.Address]string{}}
	for i, a := range as[2:] {
		r := n.allocate(a, fmt.Sprintf("M%d", i), universe12)
		if r.err != nil {
			t.Fatalf("majority allocation: %v", r.err)
		}
		u.add(a, fmt.Sprintf("M%d", i), r.c.Addr)
	}
	n.mu.Lock()
	clear(n.group)
	n.mu.Unlock()
	for i, a := range as[:2] {
		r := n.allocate(a, fmt.Sprintf("m%d", i), universe12)
		if r.err != nil {
			t.Fatalf("minority after heal: %v", r.err)
		}
		u.add(a, fmt.Sprintf("m%d", i), r.c.Addr)
	}
	n.round(5e9)
	checkConverged(t, n)
}

// A broadcast is not answered, also not by the peers whose replica is
// newer than the broadcaster's (as in 2.8.1): each of them would send its
// whole ring back to the broadcaster, n-1 multi-hop replies per broadcast.
// A unicast or a neighbour's periodic gossip from a stale peer is.
func TestStaleBroadcastIsNotAnswered(t *testing.T) {
	n := newMemNet(t, 3)
	var peers []*Allocator
	for i := 1; i <= 6; i++ {
		peers = append(peers, n.addPeer(i, consensus(6)))
	}
	var stale []byte // p1's state when only it holds space
	for i, a := range peers {
		if r := n.allocate(a, fmt.Sprintf("c%d", i), universe12); r.err != nil {
			t.Fatal(r.err)
		}
		if i == 0 {
			stale = peers[0].Gossip().Encode()[0]
		}
	}
	n.pump()
	unicastsTo := func(dst mesh.PeerName) int {
		n.mu.Lock()
		defer n.mu.Unlock()
		k := 0
		for _, m := range n.queue {
			if m.unicast && m.dst == dst {
				k++
			}
		}
		return k
	}
	p1 := peers[0].cfg.OurName
	for _, a := range peers[1:] {
		if _, err := a.OnGossipBroadcast(p1, stale); err != nil {
			t.Fatal(err)
		}
	}
	if k := unicastsTo(p1); k != 0 {
		t.Errorf("a stale broadcast drew %d replies to the broadcaster; want 0", k)
	}
	if _, err := peers[1].OnGossip(stale); err != nil {
		t.Fatal(err)
	}
	if k := unicastsTo(p1); k != 1 {
		t.Errorf("a stale neighbour's periodic gossip drew %d replies; want 1", k)
	}
}
