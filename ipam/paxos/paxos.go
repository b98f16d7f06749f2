// Package paxos is the single-decree Paxos IPAM uses to agree on the set of
// peers that seed the ring. Every node's claims travel as one gossip state
// (map NodeID -> NodeClaims); nodes merge states and each node "thinks"
// locally: promise the highest proposal seen, accept what its proposer
// accepted, and, as proposer, pick a value once a quorum has promised.
//
// Types and field names match Weave Net 2.8.1's paxos package on the wire.
package paxos

import (
	"slices"

	"github.com/weaveworks/mesh"
)

// NodeID identifies one incarnation of a peer.
type NodeID struct {
	Name mesh.PeerName
	UID  mesh.PeerUID
}

// ProposalID orders proposals by round, then proposer name, then UID.
type ProposalID struct {
	Round    uint
	Proposer NodeID
}

// Value is the proposed set of peers.
type Value []mesh.PeerName

// AcceptedValue is a value with the proposal it originated in.
type AcceptedValue struct {
	Value  Value
	Origin ProposalID
}

// NodeClaims is what one node has promised and accepted.
type NodeClaims struct {
	Promise     ProposalID
	Accepted    ProposalID
	AcceptedVal AcceptedValue
}

// GossipState is the gossiped knowledge of every node's claims.
type GossipState map[NodeID]NodeClaims

func (a NodeID) less(b NodeID) bool {
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.UID < b.UID
}

// Less orders proposals.
func (p ProposalID) Less(q ProposalID) bool {
	if p.Round != q.Round {
		return p.Round < q.Round
	}
	return p.Proposer.less(q.Proposer)
}

// Valid reports whether p is a real proposal (round 0 means none).
func (p ProposalID) Valid() bool { return p.Round > 0 }

// Node is one participant. Observers merge and report consensus but never
// promise, accept or propose.
type Node struct {
	id       NodeID
	quorum   uint
	observer bool
	knows    GossipState
}

// NewNode returns an elector with the given quorum.
func NewNode(name mesh.PeerName, uid mesh.PeerUID, quorum uint) *Node {
	n := &Node{id: NodeID{Name: name, UID: uid}, quorum: quorum, knows: GossipState{}}
	n.knows[n.id] = NodeClaims{}
	return n
}

// NewObserver returns a node that never votes.
func NewObserver(name mesh.PeerName, uid mesh.PeerUID) *Node {
	return &Node{id: NodeID{Name: name, UID: uid}, observer: true, knows: GossipState{}}
}

// ID is this node's identity.
func (n *Node) ID() NodeID { return n.id }

// IsElector reports whether the node votes.
func (n *Node) IsElector() bool { return !n.observer }

// Quorum returns the number of matching acceptances needed.
func (n *Node) Quorum() uint { return n.quorum }

// SetQuorum changes the quorum (set when the election starts).
func (n *Node) SetQuorum(q uint) { n.quorum = q }

// KnownNodes is the number of nodes we have heard from (ourselves included).
func (n *Node) KnownNodes() int { return len(n.knows) }

// Known returns the ids of known nodes, sorted.
func (n *Node) Known() []NodeID {
	out := make([]NodeID, 0, len(n.knows))
	for id := range n.knows {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b NodeID) int {
		if a.less(b) {
			return -1
		}
		if b.less(a) {
			return 1
		}
		return 0
	})
	return out
}

// GossipState returns a copy of what we know, or nil for an observer (as
// Weave's observers gossip no paxos state).
func (n *Node) GossipState() GossipState {
	if n.observer {
		return nil
	}
	out := make(GossipState, len(n.knows))
	for k, v := range n.knows {
		v.AcceptedVal.Value = slices.Clone(v.AcceptedVal.Value)
		out[k] = v
	}
	return out
}

// Update merges received claims, keeping the greater promise and the
// greater acceptance per node. It reports whether anything changed.
func (n *Node) Update(from GossipState) bool {
	changed := false
	for id, theirs := range from {
		mine, ok := n.knows[id]
		if !ok {
			mine = NodeClaims{}
			changed = true
		}
		if mine.Promise.Less(theirs.Promise) {
			mine.Promise = theirs.Promise
			changed = true
		}
		if mine.Accepted.Less(theirs.Accepted) {
			mine.Accepted = theirs.Accepted
			mine.AcceptedVal = AcceptedValue{Value: slices.Clone(theirs.AcceptedVal.Value), Origin: theirs.AcceptedVal.Origin}
			changed = true
		}
		n.knows[id] = mine
	}
	return changed
}

// Propose starts a new round above every promise seen.
func (n *Node) Propose() {
	if n.observer {
		return
	}
	var round uint
	for _, c := range n.knows {
		round = max(round, c.Promise.Round)
	}
	me := n.knows[n.id]
	me.Promise = ProposalID{Round: round + 1, Proposer: n.id}
	n.knows[n.id] = me
}

// Think performs one local Paxos step; it reports whether our claims changed.
func (n *Node) Think() bool {
	if n.observer {
		return false
	}
	me := n.knows[n.id]
	before := me
	for _, c := range n.knows { // acceptor: promise the highest proposal
		if me.Promise.Less(c.Promise) {
			me.Promise = c.Promise
		}
	}
	if me.Promise.Proposer == n.id && me.Promise.Valid() && me.Accepted != me.Promise {
		n.proposeValue(&me)
	}
	if p := me.Promise; p.Valid() && p.Proposer != n.id && me.Accepted.Less(p) {
		if c, ok := n.claimsOf(p.Proposer); ok && c.Accepted == p { // proposer accepted: follow
			me.Accepted = p
			me.AcceptedVal = AcceptedValue{Value: slices.Clone(c.AcceptedVal.Value), Origin: c.AcceptedVal.Origin}
		}
	}
	n.knows[n.id] = me
	return !sameClaims(before, me)
}

func (n *Node) claimsOf(id NodeID) (NodeClaims, bool) {
	c, ok := n.knows[id]
	return c, ok
}

// proposeValue accepts our own proposal once a quorum promised it, choosing
// the value of the highest earlier acceptance among them, else all known
// node names.
func (n *Node) proposeValue(me *NodeClaims) {
	var promised uint
	var best AcceptedValue
	var bestAcc ProposalID
	for id, c := range n.knows {
		if id != n.id && c.Promise != me.Promise {
			continue
		}
		promised++
		if c.Accepted.Valid() && bestAcc.Less(c.Accepted) {
			bestAcc, best = c.Accepted, c.AcceptedVal
		}
	}
	if promised < n.quorum {
		return
	}
	if !bestAcc.Valid() {
		best = AcceptedValue{Value: n.allNames(), Origin: me.Promise}
	}
	me.Accepted = me.Promise
	me.AcceptedVal = AcceptedValue{Value: slices.Clone(best.Value), Origin: best.Origin}
}

func (n *Node) allNames() Value {
	var v Value
	for id := range n.knows {
		v = append(v, id.Name)
	}
	slices.Sort(v)
	return slices.Compact(v)
}

func sameClaims(a, b NodeClaims) bool {
	return a.Promise == b.Promise && a.Accepted == b.Accepted &&
		a.AcceptedVal.Origin == b.AcceptedVal.Origin && slices.Equal(a.AcceptedVal.Value, b.AcceptedVal.Value)
}

// Consensus reports the value a quorum of nodes accepted, if any.
func (n *Node) Consensus() (AcceptedValue, bool) {
	counts := map[ProposalID]uint{}
	for _, c := range n.knows {
		if !c.Accepted.Valid() {
			continue
		}
		counts[c.AcceptedVal.Origin]++
		if n.quorum > 0 && counts[c.AcceptedVal.Origin] >= n.quorum {
			return AcceptedValue{Value: slices.Clone(c.AcceptedVal.Value), Origin: c.AcceptedVal.Origin}, true
		}
	}
	return AcceptedValue{}, false
}
