package ipam

import (
	"errors"
	"fmt"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/seedf75a49c6/weave/ipam/ring"
	"github.com/weaveworks/mesh"
)

var _ mesh.Gossiper = (*Allocator)(nil)

// OnGossipUnicast handles a space request, ring update or denial.
func (a *Allocator) OnGossipUnicast(src mesh.PeerName, msg []byte) error {
	if len(msg) == 0 {
		return fmt.Errorf("IPAM unicast from %s: %w: empty", src, ErrMalformed)
	}
	var err error
	switch msg[0] {
	case msgSpaceRequest, msgSpaceRequestDenied:
		r, derr := decodeRange(msg[1:])
		if derr != nil {
			return fmt.Errorf("IPAM unicast from %s: %w", src, derr)
		}
		if e := a.do(func() { a.onRangeMsg(src, msg[0], r) }); e != nil {
			return e
		}
	case msgRingUpdate:
		st, derr := decodeState(msg[1:])
		if derr != nil {
			return fmt.Errorf("IPAM unicast from %s: %w", src, derr)
		}
		if e := a.do(func() { err = a.update(src, st, viaUnicast) }); e != nil {
			return e
		}
	default:
		return fmt.Errorf("IPAM unicast from %s: %w: unknown kind %d", src, ErrMalformed, msg[0])
	}
	return err
}

// OnGossipBroadcast merges a broadcast state and returns it for relaying.
func (a *Allocator) OnGossipBroadcast(src mesh.PeerName, update []byte) (mesh.GossipData, error) {
	st, err := decodeState(update)
	if err != nil {
		return nil, fmt.Errorf("IPAM broadcast from %s: %w", src, err)
	}
	if e := a.do(func() { err = a.update(src, st, viaBroadcast) }); e != nil {
		return nil, e
	}
	return gossipData{payload: update}, err
}

// Gossip returns our full state (sent periodically by mesh).
func (a *Allocator) Gossip() mesh.GossipData {
	var st *gossipState
	if a.do(func() { st = a.state() }) != nil {
		return nil
	}
	return gossipData{payload: encodeState(st)}
}

// OnGossip merges periodic gossip; IPAM gossip is full-state, so nothing is
// forwarded.
func (a *Allocator) OnGossip(msg []byte) (mesh.GossipData, error) {
	st, err := decodeState(msg)
	if err != nil {
		return nil, fmt.Errorf("IPAM gossip: %w", err)
	}
	src := mesh.UnknownPeerName
	if st.Ring != nil {
		src = st.Ring.Peer
	}
	if e := a.do(func() { err = a.update(src, st, viaGossip) }); e != nil {
		return nil, e
	}
	return nil, err
}

// update folds a received state into ours (actor only).
// via is how a state reached us.
type via int

const (
	viaUnicast   via = iota // sent to us (a reply, a donation, a takeover's re-send)
	viaBroadcast            // flooded to every peer by src
	viaGossip               // a neighbour's periodic full state
)

func (a *Allocator) update(src mesh.PeerName, st *gossipState, how via) error {
	for p, n := range st.Nicknames {
		a.nicknames[p] = n
	}
	switch {
	case st.Ring != nil:
		return a.mergeRing(src, st.Ring, how)
	case !a.ring.Empty():
		if src != mesh.UnknownPeerName {
			a.sendRing(src) // they lack the ring
		}
	case a.cfg.Init.Mode == InitSeed:
		// Our ring comes from the seed list (created at our first
		// request), never from an election: a seed peer that answered
		// other peers' election state joined an election among every
		// peer still without a ring, flooding Paxos broadcasts (that every
		// peer with a ring answered), and could have created a ring other
		// than the seeds'.
	case st.Paxos != nil && a.paxos.IsElector():
		if !a.electing {
			a.startElection()
		}
		a.paxos.Update(st.Paxos)
		a.thinkPaxos()
	case st.Paxos == nil && a.paxos.IsElector() && !a.proposed:
		a.startElection() // an observer wants a ring
		a.proposed = true
		a.paxos.Propose()
		a.thinkPaxos()
	}
	return nil
}

func (a *Allocator) mergeRing(src mesh.PeerName, theirs *ring.Ring, how via) error {
	wasEmpty := a.ring.Empty()
	before := a.ring.Clone()
	a.ring.SetTentative(a.tentativeTokens())
	a.ring.SetYield(true) // a takeover of space we use wins; heal.go claims it back
	_, err := a.ring.Merge(theirs)
	if errors.Is(err, ring.ErrDifferentSeeds) && a.adoptForeignRing(src, theirs) {
		err = nil
	}
	if err != nil {
		a.lastError, a.lastErrorFrom = err, src
		if errors.Is(err, ring.ErrDifferentSeeds) || errors.Is(err, ring.ErrDifferentRange) {
			a.log.Error("IPAM ring from another cluster refused", "peer", src, "err", err)
		} else {
			a.log.Warn("IPAM ring merge refused", "peer", src, "err", err)
		}
		return fmt.Errorf("merge IPAM ring from %s: %w", src, err)
	}
	if a.lastErrorFrom == src {
		a.lastError = nil // the peer that caused it now merges cleanly
	}
	if wasEmpty && !a.ring.Empty() {
		a.log.Info("IPAM ring received", "peer", src)
	}
	a.dropLostTakeovers()
	a.syncSpace()
	a.noteAcks(theirs)
	// Anti-entropy: reply to a unicast or a neighbour's periodic gossip when
	// the sender lacks something we have. A unicast is also answered when it
	// taught us something or when we have not sent that peer our ring for a
	// tick: the answer is the sender's acknowledgement (rmpeer waits for
	// it), and the rate limit ends ping-pong. A broadcast is not answered
	// (as in 2.8.1): every peer whose replica differs in any entry would
	// send its whole ring back to the broadcaster over several hops, and at
	// 200 peers those replies, relayed and re-answered, kept the mesh's
	// connections full for minutes and each donation took 40-50 s. The
	// broadcaster learns what it lacks from its neighbours' periodic gossip,
	// and a takeover's acks come from its per-tick unicast re-sends.
	if src == mesh.UnknownPeerName || src == a.cfg.OurName || how == viaBroadcast {
		return nil
	}
	quiet := a.cfg.Clock.Now().Sub(a.lastRingTo[src]) >= a.cfg.TickInterval
	if ringDiffers(a.ring, theirs) || (how == viaUnicast && (ringDiffers(before, theirs) || quiet)) {
		a.sendRing(src)
	}
	return nil
}

// ringDiffers reports whether two replicas differ in any token.
func ringDiffers(ours, theirs *ring.Ring) bool {
	mine, other := ours.AllEntries(), theirs.AllEntries()
	if len(mine) != len(other) {
		return true
	}
	for i := range mine {
		m, o := mine[i], other[i]
		if m.Token != o.Token || m.Peer != o.Peer || m.Version != o.Version {
			return true
		}
	}
	return false
}

// onRangeMsg handles a space request (donate) or a denial.
func (a *Allocator) onRangeMsg(src mesh.PeerName, kind byte, r address.Range) {
	if kind == msgSpaceRequestDenied {
		a.orphanRefused(src, r)
		for _, o := range a.pending {
			if o.kind == opClaim && r.Contains(o.subnet.Addr) {
				o.denied = true
			}
		}
		return
	}
	a.donate(src, r)
}

func (a *Allocator) donate(src mesh.PeerName, r address.Range) {
	if a.ring.Empty() || a.shutdown {
		a.unicast(src, encodeRange(msgSpaceRequestDenied, r))
		return
	}
	given, ok := a.donateIn(r)
	if ok {
		if err := a.ring.GrantRangeToHost(given.Start, given.End, src); err != nil {
			a.log.Error("cannot grant IPAM space", "range", given, "peer", src, "err", err)
			_ = a.space.Add(given)
			ok = false
		}
	}
	if ok {
		a.mine = a.ring.OwnedRanges()
		a.ring.ReportFree(a.freeIn)
		a.log.Debug("donated IPAM space", "range", given, "peer", src)
		a.broadcast()
	}
	a.sendRing(src)
	if !ok {
		a.unicast(src, encodeRange(msgSpaceRequestDenied, r))
	}
}

// sendRing unicasts our state to dst, noting when for the reply rate limit.
func (a *Allocator) sendRing(dst mesh.PeerName) {
	a.lastRingTo[dst] = a.cfg.Clock.Now()
	a.unicast(dst, encodeUnicastState(a.state()))
}
