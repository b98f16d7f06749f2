package ipam

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

type opKind int

const (
	opAllocate opKind = iota
	opClaim
	opPrime
)

func (k opKind) String() string { return [...]string{"allocate", "claim", "prime"}[k] }

type opResult struct {
	addr address.CIDR
	err  error
}

// op is a pending allocation, claim or prime, owned by the actor.
type op struct {
	kind             opKind
	ident            string
	subnet           address.CIDR // allocate: subnet; claim: the address
	noErrorOnUnknown bool
	result           chan opResult
	started          time.Time
	spaceSince       time.Time // when we first ran out of space
	asked            map[mesh.PeerName]bool
	tries            int
	denied           bool
	done             bool
}

func (o *op) finish(addr address.CIDR, err error) {
	if o.done {
		return
	}
	o.done = true
	o.result <- opResult{addr: addr, err: err}
}

func (a *Allocator) start(o *op) {
	o.started = a.cfg.Clock.Now()
	a.requested = true
	if a.shutdown {
		o.finish(address.CIDR{}, ErrShutdown)
		return
	}
	if a.try(o) {
		return
	}
	a.pending = append(a.pending, o)
}

func (a *Allocator) cancel(o *op) {
	a.pending = slices.DeleteFunc(a.pending, func(p *op) bool { return p == o })
}

func (a *Allocator) cancelIdent(ident string) {
	a.pending = slices.DeleteFunc(a.pending, func(p *op) bool {
		if p.ident == ident {
			p.finish(address.CIDR{}, fmt.Errorf("%s %s: container deleted", p.kind, ident))
			return true
		}
		return false
	})
}

func (a *Allocator) tryPending() {
	a.pending = slices.DeleteFunc(a.pending, func(o *op) bool { return a.try(o) })
}

// onTick retries pending work: asks for space again and fails operations
// whose bounded wait has expired.
func (a *Allocator) onTick() {
	now := a.cfg.Clock.Now()
	for _, o := range a.pending {
		o.asked = nil // allow asking donors again
		if err := a.expired(o, now); err != nil {
			o.finish(address.CIDR{}, err)
		}
	}
	a.pending = slices.DeleteFunc(a.pending, func(o *op) bool { return o.done })
	if a.ring.Empty() && a.electing && a.paxos.IsElector() {
		a.retryElection()
	}
	a.checkTakeovers()
}

func (a *Allocator) expired(o *op, now time.Time) error {
	if a.ring.Empty() {
		if now.Sub(o.started) >= a.cfg.ConsensusTimeout {
			return fmt.Errorf("%s %s: %w after %s: %s", o.kind, o.ident, ErrNoConsensus, a.cfg.ConsensusTimeout, a.consensusProblem())
		}
		return nil
	}
	if o.kind == opAllocate && !o.spaceSince.IsZero() && now.Sub(o.spaceSince) >= a.cfg.SpaceTimeout {
		return fmt.Errorf("allocate %s in %s: %w after %s: %s", o.ident, o.subnet, ErrNoSpace, a.cfg.SpaceTimeout, a.spaceProblem(o.subnet))
	}
	return nil
}

// consensusProblem names what the ring creation is waiting for.
func (a *Allocator) consensusProblem() string {
	switch a.cfg.Init.Mode {
	case InitObserver:
		return "this peer is an observer (--ipalloc-init=observer) and no elector has created the ring; connect to a peer that is not an observer"
	case InitSeed:
		return fmt.Sprintf("waiting for the seed peers %v", a.cfg.Init.Seeds)
	}
	known := a.paxos.Known()
	inElection := map[mesh.PeerName]bool{}
	var names []string
	for _, id := range known {
		inElection[id.Name] = true
		names = append(names, a.peerLabel(id.Name))
	}
	var waiting []string // reachable peers whose claims have not reached us
	for p := range a.nicknames {
		if p != a.cfg.OurName && !inElection[p] && a.cfg.IsKnownPeer(p) {
			waiting = append(waiting, a.peerLabel(p))
		}
	}
	slices.Sort(waiting)
	base := fmt.Sprintf("awaiting consensus (quorum: %d, known: %d [%s])", a.paxos.Quorum(), len(known), strings.Join(names, ", "))
	switch missing := int(a.paxos.Quorum()) - len(known); {
	case missing <= 0:
		return base + "; the election is in progress"
	case len(waiting) >= missing:
		return fmt.Sprintf("%s; connected peer(s) %s have not answered the election yet", base, strings.Join(waiting, ", "))
	default:
		return fmt.Sprintf("%s; %d more peer(s) must join: check connections with 'weave status peers' or lower --ipalloc-init consensus=N",
			base, missing-len(waiting))
	}
}

// spaceProblem explains why no space is available in subnet.
func (a *Allocator) spaceProblem(subnet address.CIDR) string {
	var unreachable, reachable []string
	for _, e := range a.ring.AllEntries() {
		if e.Peer == a.cfg.OurName || e.Free == 0 || !address.NewRange(e.Token, e.Size).Overlaps(subnet.Range()) {
			continue
		}
		if a.cfg.IsKnownPeer(e.Peer) {
			reachable = append(reachable, a.peerLabel(e.Peer))
		} else {
			unreachable = append(unreachable, a.peerLabel(e.Peer))
		}
	}
	switch {
	case len(unreachable) > 0 && len(reachable) == 0:
		return fmt.Sprintf("all free space is owned by unreachable peers %s - use 'weave rmpeer' if they are dead", strings.Join(slices.Compact(unreachable), ", "))
	case len(reachable) > 0:
		return fmt.Sprintf("peers %s did not donate space", strings.Join(slices.Compact(reachable), ", "))
	}
	return "the subnet is full"
}

func (a *Allocator) peerLabel(p mesh.PeerName) string {
	return fmt.Sprintf("%s(%s)", p, a.nicknames[p])
}

// try advances o; it reports true when o is finished.
func (a *Allocator) try(o *op) bool {
	if o.done {
		return true
	}
	if o.kind == opClaim && !a.cfg.Universe.Range().Contains(o.subnet.Addr) {
		a.record(o.ident, o.subnet)
		o.finish(o.subnet, nil)
		return true
	}
	if !a.establishRing() {
		if o.kind == opClaim && o.noErrorOnUnknown {
			a.record(o.ident, o.subnet) // checked when the ring arrives
			o.finish(o.subnet, nil)
			return true
		}
		return false
	}
	switch o.kind {
	case opPrime:
		o.finish(address.CIDR{}, nil)
		return true
	case opClaim:
		return a.tryClaim(o)
	}
	return a.tryAllocate(o)
}

func (a *Allocator) tryAllocate(o *op) bool {
	for _, c := range a.owned[o.ident] {
		if o.subnet.Range().Contains(c.Addr) {
			o.finish(c, nil)
			return true
		}
	}
	if addr, ok := a.allocateIn(o.subnet.HostRange()); ok {
		c := address.CIDR{Addr: addr, PrefixLen: o.subnet.PrefixLen}
		ident := o.ident
		if ident == NoContainerID { // file it under the address itself
			ident = addr.String()
		}
		a.record(ident, c)
		o.finish(c, nil)
		return true
	}
	if o.spaceSince.IsZero() {
		o.spaceSince = a.cfg.Clock.Now()
	}
	a.askForSpace(o, o.subnet.HostRange())
	return false
}

// askForSpace sends one space request to the best reachable donor not yet
// asked since the last tick.
func (a *Allocator) askForSpace(o *op, r address.Range) {
	if o.asked == nil {
		o.asked = map[mesh.PeerName]bool{}
	}
	for _, p := range a.ring.ChoosePeersToAskForSpace(r.Start, r.End, a.cfg.Rand) {
		if o.asked[p] || !a.cfg.IsKnownPeer(p) {
			continue
		}
		o.asked[p] = true
		a.unicast(p, encodeRange(msgSpaceRequest, r))
		return
	}
}

func (a *Allocator) tryClaim(o *op) bool {
	addr := o.subnet.Addr
	for ident, cs := range a.owned {
		if ident != o.ident && slices.ContainsFunc(cs, func(c address.CIDR) bool { return c.Addr == addr }) {
			o.finish(address.CIDR{}, fmt.Errorf("claim %s for %s: %w %s", addr, o.ident, ErrAddressInUse, ident))
			return true
		}
	}
	if a.space.IsAllocated(addr) {
		a.record(o.ident, o.subnet)
		o.finish(o.subnet, nil)
		return true
	}
	owner := a.ring.Owner(addr)
	if owner == a.cfg.OurName && a.space.Owns(addr) {
		if err := a.space.Claim(addr); err != nil {
			o.finish(address.CIDR{}, fmt.Errorf("claim %s for %s: %w", addr, o.ident, err))
			return true
		}
		a.record(o.ident, o.subnet)
		o.finish(o.subnet, nil)
		return true
	}
	if o.denied || o.tries >= a.cfg.ClaimTries {
		o.finish(address.CIDR{}, fmt.Errorf("claim %s for %s: %w: it belongs to %s", addr, o.ident, ErrClaimRefused, a.peerLabel(owner)))
		return true
	}
	if o.asked == nil && owner != a.cfg.OurName {
		o.asked = map[mesh.PeerName]bool{owner: true}
		o.tries++
		a.unicast(owner, encodeRange(msgSpaceRequest, address.NewRange(addr, 1)))
	}
	return false
}

func (a *Allocator) record(ident string, c address.CIDR) {
	if !slices.Contains(a.owned[ident], c) {
		a.owned[ident] = append(a.owned[ident], c)
	}
}

// establishRing reports whether the ring exists, starting its creation
// (seeding, or a Paxos election) when it does not.
func (a *Allocator) establishRing() bool {
	if !a.ring.Empty() {
		return true
	}
	switch a.cfg.Init.Mode {
	case InitSeed:
		a.createRing(a.cfg.Init.Seeds)
		return !a.ring.Empty()
	case InitObserver:
		if !a.electing {
			a.electing = true
			a.broadcast() // our nil-Paxos state asks electors to hold the election
		}
		return false
	}
	if !a.electing {
		a.startElection()
	}
	if !a.proposed {
		a.proposed = true
		a.paxos.Propose()
	}
	a.thinkPaxos()
	return !a.ring.Empty()
}

func (a *Allocator) startElection() {
	a.electing = true
	if a.paxos.Quorum() == 0 {
		a.paxos.SetQuorum(uint(max(1, a.cfg.InitialPeerCount()))/2 + 1)
	}
	a.log.Info("starting IPAM election", "quorum", a.paxos.Quorum())
}

// thinkPaxos runs a Paxos step, broadcasting our claims if they changed and
// creating the ring on consensus.
func (a *Allocator) thinkPaxos() {
	changed := a.paxos.Think()
	if v, ok := a.paxos.Consensus(); ok {
		a.createRing(v.Value)
		return
	}
	if changed {
		a.broadcast()
	}
}

func (a *Allocator) createRing(peers []mesh.PeerName) {
	if err := a.ring.ClaimForPeers(peers); err != nil {
		a.lastError = err
		a.log.Error("cannot create IPAM ring", "err", err)
		for _, o := range a.pending {
			o.finish(address.CIDR{}, fmt.Errorf("%s %s: %w: %w", o.kind, o.ident, ErrConfig, err))
		}
		a.pending = nil
		return
	}
	a.log.Info("IPAM ring created", "peers", len(peers), "range", a.cfg.Universe)
	a.syncSpace()
	a.broadcast()
}

// syncSpace makes the space match the ranges the ring says we own: new
// ranges (donations, consensus, handovers) become free space, ranges taken
// away lose their free addresses.
func (a *Allocator) syncSpace() {
	now := a.ring.OwnedRanges()
	for _, r := range subtractAll(now, a.mine) {
		for _, x := range a.untentative(r) {
			if err := a.space.Add(x); err != nil {
				a.log.Error("cannot add IPAM space", "range", x, "err", err)
			}
		}
	}
	for _, r := range subtractAll(a.mine, now) {
		// Addresses held there leave our space too: they are orphans now,
		// claimed back from the new owner (heal.go), never freed into a
		// range that is not ours.
		for _, addr := range a.space.Allocated() {
			if r.Contains(addr) {
				_ = a.space.Free(addr)
			}
		}
		if n := a.space.Remove(r); n > 0 {
			a.log.Info("IPAM space taken over by another peer", "range", r, "free", n)
		}
	}
	a.mine = now
	a.claimRecorded()
}

// claimRecorded marks addresses recorded before we owned their range
// (claims made with noErrorOnUnknown, restored state) as allocated, so
// they are never handed out again.
func (a *Allocator) claimRecorded() {
	for ident, cs := range a.owned {
		for _, c := range cs {
			if a.space.Owns(c.Addr) && !a.space.IsAllocated(c.Addr) {
				if err := a.space.Claim(c.Addr); err != nil {
					a.log.Warn("cannot claim recorded address", "container", ident, "addr", c.Addr, "err", err)
				}
			}
		}
	}
}

// subtractAll returns the parts of xs not covered by ys.
func subtractAll(xs, ys []address.Range) []address.Range {
	out := slices.Clone(xs)
	for _, y := range ys {
		var next []address.Range
		for _, x := range out {
			if !x.Overlaps(y) {
				next = append(next, x)
				continue
			}
			if x.Start < y.Start {
				next = append(next, address.Range{Start: x.Start, End: y.Start})
			}
			if y.End < x.End {
				next = append(next, address.Range{Start: y.End, End: x.End})
			}
		}
		out = next
	}
	return out
}

func (a *Allocator) unicast(dst mesh.PeerName, msg []byte) {
	g := a.sender()
	if g == nil {
		return
	}
	if err := g.GossipUnicast(dst, msg); err != nil {
		a.log.Debug("IPAM unicast failed", "peer", dst, "err", err)
	}
}

func (a *Allocator) broadcast() {
	if g := a.sender(); g != nil {
		g.GossipBroadcast(gossipData{payload: encodeState(a.state())})
	}
}

func (a *Allocator) state() *gossipState {
	st := &gossipState{Now: a.cfg.Clock.Now().Unix(), Nicknames: map[mesh.PeerName]string{}}
	for k, v := range a.nicknames {
		st.Nicknames[k] = v
	}
	if a.ring.Empty() {
		st.Paxos = a.paxos.GossipState()
	} else {
		st.Ring = a.ring.Clone()
	}
	return st
}

// retryElection (on tick, no ring yet) re-sends our claims, since gossip
// may have been lost, and, when the election made no progress for a whole
// tick while operations wait, proposes a higher round (with probability
// 1/2, so duelling proposers do not stay in step).
func (a *Allocator) retryElection() {
	snapshot := fmt.Sprint(a.paxos.GossipState())
	if snapshot == a.lastPaxos && len(a.pending) > 0 && a.cfg.Rand.IntN(2) == 0 {
		a.proposed = true
		a.paxos.Propose()
	}
	a.lastPaxos = snapshot
	a.thinkPaxos()
	a.broadcast()
}
