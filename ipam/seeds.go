package ipam

import (
	"slices"

	"github.com/seedf75a49c6/weave/ipam/ring"
	"github.com/seedf75a49c6/weave/ipam/space"
	"github.com/weaveworks/mesh"
)

// Rings "seeded by different peers" (two clusters that each created a ring,
// typically peers launched without each other as targets) never merge in
// Weave. We resolve them when it is safe: the ring that ranks lower is
// abandoned by each of its peers that holds no address, which then adopts
// the winner. A peer holding addresses never abandons its ring, so no
// address it handed out can be handed out again from the adopted ring by
// it; the conflict stays reported until such peers release or reset.
//
// Rank: a ring in use (some token with allocations) beats an unused one;
// then the lexicographically smaller seed list wins. Both sides compute the
// same order, so at most one side yields.

// ringInUse reports whether any token shows allocations.
func ringInUse(r *ring.Ring) bool {
	for _, e := range r.AllEntries() {
		if uint32(e.Free) < e.Size {
			return true
		}
	}
	return false
}

// outranks reports whether ring x wins over ring y.
func outranks(x, y *ring.Ring) bool {
	if ux, uy := ringInUse(x), ringInUse(y); ux != uy {
		return ux
	}
	return slices.Compare(x.Seeds, y.Seeds) < 0
}

// adoptForeignRing replaces our ring with theirs when theirs outranks ours
// and we hold nothing; it reports whether it did. When ours wins, the
// sender is sent our ring so its idle peers can adopt it.
func (a *Allocator) adoptForeignRing(src mesh.PeerName, theirs *ring.Ring) bool {
	if !outranks(theirs, a.ring) {
		if src != mesh.UnknownPeerName && a.cfg.Clock.Now().Sub(a.lastRingTo[src]) >= a.cfg.TickInterval {
			a.sendRing(src)
		}
		return false
	}
	if a.space.NumAllocated() > 0 || len(a.tentative) > 0 || a.hasPendingClaims() {
		return false
	}
	a.log.Warn("abandoning our IPAM ring for another cluster's (we hold no addresses)",
		"oursSeededBy", a.ring.Seeds, "theirsSeededBy", theirs.Seeds, "peer", src)
	u := a.cfg.Universe.Range()
	a.ring = ring.New(u.Start, u.End, a.cfg.OurName)
	a.space = space.New()
	a.mine = nil
	if _, err := a.ring.Merge(theirs); err != nil {
		a.log.Error("cannot adopt foreign IPAM ring", "err", err)
		return true // we are now empty; the next gossip retries
	}
	a.lastError = nil
	return true
}

func (a *Allocator) hasPendingClaims() bool {
	for _, o := range a.pending {
		if o.kind == opClaim {
			return true
		}
	}
	return false
}
