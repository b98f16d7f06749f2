package ipam

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/seedf75a49c6/weave/ipam/ring"
	"github.com/weaveworks/mesh"
)

// PaxosStatus is shown while the ring is being created.
type PaxosStatus struct {
	Elector    bool
	KnownNodes int
	Quorum     uint
}

// EntryStatus is one ring token.
type EntryStatus struct {
	Token       string
	Size        uint32
	Peer        string
	Nickname    string
	IsKnownPeer bool
	Version     uint32
}

// ClaimStatus is a pending claim.
type ClaimStatus struct {
	Ident string
	CIDR  string
}

// Status is IPAM's part of `weave report` (field names as Weave 2.8.1's),
// plus Problem (ours): what a blocked allocation is waiting for.
type Status struct {
	Paxos            *PaxosStatus
	Range            string
	RangeNumIPs      int
	ActiveIPs        int
	DefaultSubnet    string
	Entries          []EntryStatus
	PendingClaims    []ClaimStatus
	PendingAllocates []string
	State            string `json:"-"` // the "Status:" line of `weave status`
	Problem          string `json:",omitempty"`
	// Conflicts (ours) are addresses held here that the peer which took
	// over our space while we were cut off has given out too.
	Conflicts []ConflictStatus `json:",omitempty"`
	// ConflictsSeen counts such conflicts since the start.
	ConflictsSeen uint64 `json:",omitempty"`
	ourName       mesh.PeerName
}

// Status returns a snapshot for reports and the status texts.
func (a *Allocator) Status() Status {
	var s Status
	if a.do(func() { s = a.status() }) != nil {
		s = Status{State: "stopped", Range: a.cfg.Universe.String()}
	}
	return s
}

func (a *Allocator) status() Status {
	s := Status{
		Range: a.cfg.Universe.String(), RangeNumIPs: int(a.cfg.Universe.Size()),
		ActiveIPs: a.space.NumAllocated(), DefaultSubnet: a.cfg.DefaultSubnet.String(), ourName: a.cfg.OurName,
	}
	if a.ring.Empty() && a.electing && a.requested {
		s.Paxos = &PaxosStatus{Elector: a.paxos.IsElector(), KnownNodes: a.paxos.KnownNodes(), Quorum: a.paxos.Quorum()}
	}
	for _, e := range a.ring.AllEntries() {
		s.Entries = append(s.Entries, EntryStatus{
			Token: e.Token.String(), Size: e.Size, Peer: e.Peer.String(), Nickname: a.nicknames[e.Peer],
			IsKnownPeer: e.Peer == a.cfg.OurName || a.cfg.IsKnownPeer(e.Peer), Version: e.Version,
		})
	}
	for _, o := range a.pending {
		switch o.kind {
		case opClaim:
			s.PendingClaims = append(s.PendingClaims, ClaimStatus{Ident: o.ident, CIDR: o.subnet.String()})
		case opAllocate:
			s.PendingAllocates = append(s.PendingAllocates, o.ident)
		}
	}
	s.State, s.Problem = a.stateLine()
	s.Conflicts, s.ConflictsSeen = a.conflicts(), a.conflictsSeen
	return s
}

func (a *Allocator) stateLine() (state, problem string) {
	switch {
	case a.shutdown:
		return a.shutdownState, ""
	case a.ring.Empty() && errors.Is(a.lastError, ring.ErrTooSmall):
		return "idle", fmt.Sprintf("cannot create the ring: %v", a.lastError)
	case a.ring.Empty() && !a.requested:
		return "idle", "" // as 2.8.1: consensus waits for our first request
	case a.ring.Empty() && a.electing && a.paxos.IsElector():
		return fmt.Sprintf("awaiting consensus (quorum: %d, known: %d)", a.paxos.Quorum(), a.paxos.KnownNodes()), a.consensusProblem()
	case a.ring.Empty() && a.electing:
		return "priming", a.consensusProblem()
	case a.ring.Empty():
		return "idle", ""
	}
	for _, o := range a.pending {
		if o.kind == opAllocate {
			p := a.spaceProblem(o.subnet)
			if len(p) > 20 && p[:20] == "all free space is ow" {
				return "all IP ranges owned by unreachable peers - use 'rmpeer' if they are dead", p
			}
			return "waiting for IP(s) to become available", p
		}
	}
	if a.lastError != nil && (errors.Is(a.lastError, ring.ErrDifferentSeeds) || errors.Is(a.lastError, ring.ErrDifferentRange)) {
		return "ready", fmt.Sprintf("refusing gossip from another IPAM cluster: %v", a.lastError)
	}
	if len(a.tentative) > 0 {
		return "ready", a.takeoverProblem()
	}
	return "ready", a.healProblem()
}

func (a *Allocator) takeoverProblem() string {
	var need []string
	for _, t := range a.tentative {
		for p := range t.need {
			need = append(need, a.peerLabel(p))
		}
	}
	slices.Sort(need)
	return fmt.Sprintf("rmpeer takeover waiting for acknowledgement from %v", slices.Compact(need))
}

// WriteText writes `weave status ipam`: one line per peer, ours first, in
// Weave's format, followed by the problem (if any) when allocation is blocked.
func (s Status) WriteText(w io.Writer) {
	type agg struct {
		label   string
		size    uint64
		known   bool
		ordinal int
	}
	byPeer := map[string]*agg{}
	var order []string
	for _, e := range s.Entries {
		g, ok := byPeer[e.Peer]
		if !ok {
			g = &agg{label: fmt.Sprintf("%s(%s)", e.Peer, e.Nickname), known: e.IsKnownPeer, ordinal: len(order)}
			byPeer[e.Peer] = g
			order = append(order, e.Peer)
		}
		g.size += uint64(e.Size)
	}
	us := s.ourName.String()
	if i := slices.Index(order, us); i > 0 {
		order = append(append([]string{us}, order[:i]...), order[i+1:]...)
	}
	for _, p := range order {
		g := byPeer[p]
		info := ""
		switch {
		case p == us:
			info = fmt.Sprintf("(%d active)", s.ActiveIPs)
		case !g.known:
			info = "- unreachable!"
		}
		pct := 100 * float64(g.size) / float64(max(1, s.RangeNumIPs))
		fmt.Fprintf(w, "%-37v %8d IPs (%04.1f%% of total) %s\n", g.label, g.size, pct, info)
	}
	if len(s.Entries) == 0 && s.State != "" {
		fmt.Fprintf(w, "%s\n", s.State)
	}
	if s.Problem != "" {
		fmt.Fprintf(w, "%s\n", s.Problem)
	}
}
