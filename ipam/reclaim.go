package ipam

import (
	"fmt"
	"slices"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/seedf75a49c6/weave/ipam/ring"
	"github.com/weaveworks/mesh"
)

// takeover is a token we took from a dead peer (rmpeer) and may not
// allocate from until every other token holder has acknowledged it.
type takeover struct {
	from    mesh.PeerName
	rng     address.Range
	version uint32
	need    map[mesh.PeerName]bool
}

func (a *Allocator) tentativeTokens() map[address.Address]bool {
	out := make(map[address.Address]bool, len(a.tentative))
	for t := range a.tentative {
		out[t] = true
	}
	return out
}

// untentative returns the parts of r not held tentatively.
func (a *Allocator) untentative(r address.Range) []address.Range {
	var ts []address.Range
	for _, t := range a.tentative {
		ts = append(ts, t.rng)
	}
	return subtractAll([]address.Range{r}, ts)
}

// dropLostTakeovers forgets takeovers that a competing claim won.
func (a *Allocator) dropLostTakeovers() {
	for tok, t := range a.tentative {
		if o := a.ring.Owner(tok); o != a.cfg.OurName || a.tokenRange(tok) != t.rng {
			a.log.Info("concurrent rmpeer resolved in favour of another peer", "token", tok, "peer", o, "from", t.from)
			delete(a.tentative, tok)
		}
	}
}

func (a *Allocator) tokenRange(tok address.Address) address.Range {
	for _, e := range a.ring.AllEntries() {
		if e.Token == tok {
			return address.NewRange(e.Token, e.Size)
		}
	}
	return address.Range{}
}

// noteAcks records which peers' rings show our takeovers, confirming each
// takeover once nobody else is left to ask.
func (a *Allocator) noteAcks(theirs *ring.Ring) {
	for _, e := range theirs.AllEntries() {
		if t, ok := a.tentative[e.Token]; ok && e.Peer == a.cfg.OurName && e.Version >= t.version {
			delete(t.need, theirs.Peer)
		}
	}
	a.confirmTakeovers()
}

func (a *Allocator) confirmTakeovers() {
	for tok, t := range a.tentative {
		if len(t.need) > 0 {
			continue
		}
		delete(a.tentative, tok)
		if err := a.space.Add(t.rng); err != nil {
			a.log.Error("cannot add taken-over IPAM space", "range", t.rng, "err", err)
			continue
		}
		a.log.Info("rmpeer takeover confirmed by all peers", "range", t.rng, "from", t.from)
	}
}

// checkTakeovers (on tick) re-sends our ring to peers whose ack is missing.
func (a *Allocator) checkTakeovers() {
	asked := map[mesh.PeerName]bool{}
	for _, t := range a.tentative {
		for p := range t.need {
			if !asked[p] && a.cfg.IsKnownPeer(p) {
				asked[p] = true
				a.sendRing(p)
			}
		}
	}
	a.confirmTakeovers()
}

// AdminTakeoverRanges implements `weave rmpeer PEER` (DELETE /peer/PEER):
// the ranges of a dead peer, named by peer name or nickname, become ours.
// It returns the number of addresses taken over. The space is usable once
// every other token holder has acknowledged the takeover (docs/ipam.md).
func (a *Allocator) AdminTakeoverRanges(peer string) (address.Count, error) {
	var n address.Count
	var err error
	if e := a.do(func() { n, err = a.takeover(peer) }); e != nil {
		return 0, e
	}
	return n, err
}

func (a *Allocator) lookupPeer(s string) (mesh.PeerName, error) {
	if name, err := mesh.PeerNameFromUserInput(s); err == nil {
		return name, nil
	}
	for p, nick := range a.nicknames {
		if nick == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("look up peer %q: %w", s, ErrUnknownPeer)
}

// takeover: as in 2.8.1, a name we do not know and a ring that does not
// exist yet take over nothing (0 IPs). Unlike 2.8.1 we refuse ourselves
// and a peer still in the topology (taking over a live peer's space gives
// out its addresses twice), unless the failure detector holds it dead and
// mesh no longer reaches it (PeerGone); one about to leave the topology is
// refused with ErrPeerDropping, which callers retry soon.
func (a *Allocator) takeover(peer string) (address.Count, error) {
	p, err := a.lookupPeer(peer)
	if err != nil {
		a.log.Info("rmpeer: no such peer, nothing taken over", "peer", peer)
		return 0, nil
	}
	if p == a.cfg.OurName {
		return 0, fmt.Errorf("rmpeer %s: %w; to leave the mesh run 'weave reset' on this host", a.peerLabel(p), ErrRemoveSelf)
	}
	if a.cfg.IsKnownPeer(p) {
		switch {
		case a.cfg.PeerGone(p):
			a.log.Info("rmpeer of a peer held dead that mesh no longer reaches", "peer", p)
		case a.cfg.PeerDropping(p):
			return 0, fmt.Errorf("rmpeer %s: %w; retry in a few seconds", a.peerLabel(p), ErrPeerDropping)
		default:
			return 0, fmt.Errorf("rmpeer %s: %w; run 'weave reset' on that host (it hands its space over), "+
				"or stop it and 'weave forget' it everywhere, then retry", a.peerLabel(p), ErrPeerReachable)
		}
	}
	if a.ring.Empty() {
		return 0, nil
	}
	// Token holders and every reachable peer must acknowledge.
	holders := a.ring.PeerNames()
	for q := range a.nicknames {
		if a.cfg.IsKnownPeer(q) {
			holders[q] = struct{}{}
		}
	}
	var moved []address.Address
	for _, e := range a.ring.AllEntries() {
		if e.Peer == p {
			moved = append(moved, e.Token)
		}
	}
	a.reclaimed = append(a.reclaimed, a.ring.Transfer(p, a.cfg.OurName)...)
	for _, t := range a.tentative {
		delete(t.need, p)
	}
	var n address.Count
	for _, tok := range moved {
		e := a.entryAt(tok)
		t := &takeover{from: p, rng: address.NewRange(tok, e.Size), version: e.Version, need: map[mesh.PeerName]bool{}}
		for h := range holders {
			if h != p && h != a.cfg.OurName {
				t.need[h] = true
			}
		}
		a.tentative[tok] = t
		n += address.Count(e.Size)
	}
	a.syncSpace()
	a.broadcast()
	a.checkTakeovers()
	a.log.Info("rmpeer: took over ranges", "peer", p, "addresses", n, "tokens", len(moved))
	return n, nil
}

func (a *Allocator) entryAt(tok address.Address) ring.EntryInfo {
	for _, e := range a.ring.AllEntries() {
		if e.Token == tok {
			return e
		}
	}
	return ring.EntryInfo{}
}

// Shutdown implements `weave reset` (DELETE /peer): pending operations fail,
// and all our ranges go to an heir so the space is not stranded.
func (a *Allocator) Shutdown() error {
	return a.do(a.handOver)
}

func (a *Allocator) handOver() {
	first := !a.shutdown
	a.shutdown = true
	for _, o := range a.pending {
		o.finish(address.CIDR{}, ErrShutdown)
	}
	a.pending = nil
	switch note := a.transferAll(); {
	case note != "":
		a.shutdownState = "shut down: " + note
	case first:
		a.shutdownState = "shut down: we owned no IP space, nothing handed over"
	}
}

// transferAll gives all our tokens to an heir and says what it did ("" when
// we own nothing).
func (a *Allocator) transferAll() string {
	if a.ring.Empty() || len(a.ring.OwnedRanges()) == 0 {
		return ""
	}
	heir := a.chooseHeir()
	if heir == mesh.UnknownPeerName {
		a.log.Warn("IPAM shutdown: no other peer to hand our space to")
		return "no reachable peer to hand our IP space to, it stays ours"
	}
	moved := a.ring.Transfer(a.cfg.OurName, heir)
	a.tentative = map[address.Address]*takeover{}
	a.syncSpace()
	a.owned = map[string][]address.CIDR{}
	a.log.Info("IPAM shutdown: handed our ranges over", "peer", heir, "ranges", len(moved))
	a.broadcast()
	return fmt.Sprintf("IP space handed over to %s", a.peerLabel(heir))
}

// chooseHeir prefers a reachable peer already holding tokens, then any
// reachable peer we have heard of.
func (a *Allocator) chooseHeir() mesh.PeerName {
	var holders, others []mesh.PeerName
	for p := range a.ring.PeerNames() {
		if p != a.cfg.OurName && a.cfg.IsKnownPeer(p) {
			holders = append(holders, p)
		}
	}
	for p := range a.nicknames {
		if p != a.cfg.OurName && a.cfg.IsKnownPeer(p) {
			others = append(others, p)
		}
	}
	slices.Sort(holders)
	slices.Sort(others)
	if len(holders) > 0 {
		return holders[0]
	}
	if len(others) > 0 {
		return others[0]
	}
	return mesh.UnknownPeerName
}

// PeerGone is called when mesh garbage-collects a peer. Its ranges stay
// in the ring (only rmpeer moves them); status shows it as unreachable.
func (a *Allocator) PeerGone(name mesh.PeerName) {
	_ = a.do(func() { a.log.Debug("peer gone", "peer", name) })
}
