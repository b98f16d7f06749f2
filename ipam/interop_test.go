package ipam

import (
	"context"
	"sync"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/paxos"
	"github.com/weaveworks/mesh"
)

// recorder is a mesh.Gossip that keeps what the allocator sends.
type recorder struct {
	mu         sync.Mutex
	broadcasts [][]byte
	unicasts   map[mesh.PeerName][][]byte
}

var _ mesh.Gossip = (*recorder)(nil)

func (r *recorder) GossipUnicast(dst mesh.PeerName, msg []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unicasts == nil {
		r.unicasts = map[mesh.PeerName][][]byte{}
	}
	r.unicasts[dst] = append(r.unicasts[dst], msg)
	return nil
}

func (r *recorder) GossipBroadcast(d mesh.GossipData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.broadcasts = append(r.broadcasts, d.Encode()...)
}

func (r *recorder) GossipNeighbourSubset(d mesh.GossipData) { r.GossipBroadcast(d) }

func (r *recorder) last(t *testing.T) *gossipState {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.broadcasts) == 0 {
		t.Fatal("nothing broadcast")
	}
	st, err := decodeState(r.broadcasts[len(r.broadcasts)-1])
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestInteropWithCapturedWeavePeer plays Weave 2.8.1's h1 (from the
// plain-ipam capture) against our allocator standing in for h2: we must
// promise h1's proposal, accept its value, build the same ring, merge h1's
// ring, and hand out 10.40.0.0/12 exactly as Weave's h2 did.
func TestInteropWithCapturedWeavePeer(t *testing.T) {
	caps := loadCaptured(t)
	h1, _ := mesh.PeerNameFromString("aa:00:00:00:00:01")
	h2, _ := mesh.PeerNameFromString("aa:00:00:00:00:02")
	rec := &recorder{}
	a, err := New(Config{OurName: h2, OurUID: 7753115273493511360, OurNickname: "h2",
		Init: Init{Mode: InitConsensus, Quorum: 2}, CheckInvariants: true, Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	a.SetGossip(rec)
	a.Start()
	defer a.Stop()

	if _, err := a.OnGossipBroadcast(h1, caps[116]); err != nil { // h1's promise, round 1
		t.Fatal(err)
	}
	h1ID := paxos.NodeID{Name: h1, UID: 440508941995316861}
	ours := rec.last(t).Paxos[paxos.NodeID{Name: h2, UID: 7753115273493511360}]
	if ours.Promise != (paxos.ProposalID{Round: 1, Proposer: h1ID}) {
		t.Fatalf("we did not promise h1's proposal: %+v", ours)
	}
	if _, err := a.OnGossipBroadcast(h1, caps[118]); err != nil { // h1 accepted [h1 h2]
		t.Fatal(err)
	}
	st := rec.last(t)
	if st.Ring == nil {
		t.Fatalf("no ring after h1's accept; paxos %+v", st.Paxos)
	}
	want, _ := decodeState(caps[120])
	if got, w := st.Ring.AllEntries(), want.Ring.AllEntries(); len(got) != 2 || got[0].Token != w[0].Token ||
		got[1].Token != w[1].Token || got[0].Peer != w[0].Peer || got[1].Peer != w[1].Peer {
		t.Fatalf("our ring %v differs from Weave's %v", st.Ring, want.Ring)
	}
	if _, err := a.OnGossipBroadcast(h1, caps[120]); err != nil { // h1's ring
		t.Fatalf("merging Weave's ring: %v", err)
	}
	c, err := a.Allocate(context.Background(), "c2", universe12)
	if err != nil || c.String() != "10.40.0.0/12" {
		t.Fatalf("allocate = %v %v, Weave's h2 got 10.40.0.0/12", c, err)
	}
	for _, f := range []int{148, 152, 170, 175} { // later periodic gossip from both
		if _, err := a.OnGossip(caps[f]); err != nil {
			t.Fatalf("frame %d: %v", f, err)
		}
	}
}
