package ipam

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/address"
)

// TestChurnWithRmpeerAndReset: allocations and releases while peers die
// (and are removed with rmpeer, sometimes on two survivors at once), reset
// (handing their space over) and new peers join. Addresses of a dead or
// reset peer's containers die with it. No live address is ever held twice,
// and after a final heal the survivors agree on the ring.
func TestChurnWithRmpeerAndReset(t *testing.T) {
	if testing.Short() {
		t.Skip("long multi-peer run; skipped with -short")
	}
	n := newMemNet(t, 1234)
	subnet := address.MustParseCIDR("10.9.0.0/22")
	cfg := func(c *Config) {
		c.Universe, c.DefaultSubnet = subnet, subnet
		c.Init = Init{Mode: InitConsensus, Quorum: 2}
		c.SpaceTimeout = 30e9
	}
	next := 1
	var live []*Allocator
	add := func() {
		live = append(live, n.addPeer(next, cfg))
		next++
	}
	for range 4 {
		add()
	}
	rnd := rand.New(rand.NewPCG(5, 5))
	u := &uniqueness{t: t, holder: map[address.Address]string{}}
	type holding struct {
		peer  *Allocator
		ident string
		addr  address.Address
	}
	var held []holding
	dropPeer := func(p *Allocator) {
		held = slices.DeleteFunc(held, func(h holding) bool {
			if h.peer == p {
				delete(u.holder, h.addr)
				return true
			}
			return false
		})
		live = slices.DeleteFunc(live, func(q *Allocator) bool { return q == p })
	}
	ok := 0
	for step := 0; step < 700; step++ {
		switch x := rnd.IntN(100); {
		case x < 2 && len(live) > 3: // a peer dies; one or two survivors rmpeer it
			dead := live[rnd.IntN(len(live))]
			kill(n, dead)
			dropPeer(dead)
			takers := []*Allocator{live[rnd.IntN(len(live))]}
			if rnd.IntN(2) == 0 {
				takers = append(takers, live[rnd.IntN(len(live))])
			}
			for _, tk := range takers {
				if _, err := tk.AdminTakeoverRanges(dead.cfg.OurNickname); err != nil {
					t.Fatalf("rmpeer %s on %s: %v", dead.cfg.OurNickname, tk.cfg.OurNickname, err)
				}
			}
		case x < 3 && len(live) > 3: // weave reset
			p := live[rnd.IntN(len(live))]
			if err := p.Shutdown(); err != nil {
				t.Fatal(err)
			}
			n.pump()
			kill(n, p)
			dropPeer(p)
		case x < 5 && len(live) < 6:
			add()
		case x < 30 && len(held) > 0:
			i := rnd.IntN(len(held))
			h := held[i]
			if err := h.peer.Free(h.ident, h.addr); err != nil {
				t.Fatalf("free: %v", err)
			}
			delete(u.holder, h.addr)
			held = slices.Delete(held, i, i+1)
		default:
			p := live[rnd.IntN(len(live))]
			id := fmt.Sprintf("c%d", step)
			if r := n.allocate(p, id, subnet); r.err == nil {
				u.add(p, id, r.c.Addr)
				held = append(held, holding{p, id, r.c.Addr})
				ok++
			}
		}
	}
	for range 4 {
		n.round(5e9)
	}
	survivors := &memNet{t: t, peers: map[meshName]*Allocator{}}
	for _, p := range live {
		survivors.peers[p.cfg.OurName] = p
		survivors.order = append(survivors.order, p.cfg.OurName)
	}
	checkConverged(t, survivors)
	t.Logf("%d allocations, %d peers joined in total, %d live at the end", ok, next-1, len(live))
	if ok < 250 {
		t.Fatalf("only %d allocations succeeded", ok)
	}
}
