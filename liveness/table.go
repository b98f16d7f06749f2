package liveness

import (
	"slices"
	"strings"
	"time"
)

// statusTable is the peers' states as a Detector, or a Group combining
// detectors, records them: the status of each peer ever seen, how often
// each state was entered, and a channel closed at every change. Its
// owner's mutex guards it.
type statusTable struct {
	peers   map[string]Status
	counts  [len(stateNames)]uint64
	changed chan struct{} // closed and replaced by notify
}

func newStatusTable() statusTable {
	return statusTable{peers: map[string]Status{}, changed: make(chan struct{})}
}

// set records peer's state st since at; it reports the old status and
// whether st is a change (callers notify once per batch of changes).
func (t *statusTable) set(peer string, st State, at time.Time) (old Status, changed bool) {
	old = t.peers[peer]
	if old.State == st {
		return old, false
	}
	t.peers[peer] = Status{Peer: peer, State: st, Since: at}
	t.counts[st]++
	return old, true
}

// notify wakes every Await: something changed.
func (t *statusTable) notify() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// get is peer's status; State is Unknown for a peer never seen.
func (t *statusTable) get(peer string) Status {
	if s, ok := t.peers[peer]; ok {
		return s
	}
	return Status{Peer: peer}
}

// list is every peer's status, sorted by name.
func (t *statusTable) list() []Status {
	out := make([]Status, 0, len(t.peers))
	for _, s := range t.peers {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Peer, b.Peer) })
	return out
}

// transitions is how many times a peer entered state s.
func (t *statusTable) transitions(s State) uint64 {
	if s < 0 || int(s) >= len(t.counts) {
		return 0
	}
	return t.counts[s]
}
