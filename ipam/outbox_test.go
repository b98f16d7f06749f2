package ipam

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weaveworks/mesh"
)

// blockingGossip records sends; each unicast waits until release is closed,
// as mesh's does on a full TCP connection.
type blockingGossip struct {
	release chan struct{}
	mu      sync.Mutex
	sent    []string
	bcasts  []string
	started chan struct{} // one value per unicast begun
}

func (g *blockingGossip) GossipUnicast(dst mesh.PeerName, msg []byte) error {
	g.started <- struct{}{}
	<-g.release
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sent = append(g.sent, dst.String()+":"+string(msg))
	return nil
}

func (g *blockingGossip) GossipBroadcast(d mesh.GossipData) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bcasts = append(g.bcasts, string(d.Encode()[0]))
}

func (g *blockingGossip) GossipNeighbourSubset(mesh.GossipData) {}

func TestOutboxNeverBlocksAndKeepsTheLatestState(t *testing.T) {
	g := &blockingGossip{release: make(chan struct{}), started: make(chan struct{}, outboxLimit+8)}
	o := NewOutbox(g, nil)
	const a, b = mesh.PeerName(0xa), mesh.PeerName(0xb)
	ring := func(s string) []byte { return append([]byte{msgRingUpdate}, s...) }
	req := func(s string) []byte { return append([]byte{msgSpaceRequest}, s...) }

	// the first send gets stuck in the "connection"
	if err := o.GossipUnicast(a, req("first")); err != nil {
		t.Fatal(err)
	}
	<-g.started
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, m := range []struct {
			dst mesh.PeerName
			msg []byte
		}{{a, ring("a1")}, {b, req("b1")}, {a, ring("a2")}, {b, ring("b-ring")}, {a, req("a-req")}} {
			if err := o.GossipUnicast(m.dst, m.msg); err != nil {
				t.Error(err)
			}
		}
		o.GossipBroadcast(gossipData{payload: []byte("s1")})
		o.GossipBroadcast(gossipData{payload: []byte("s2")})
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("sends blocked behind a stuck connection")
	}
	close(g.release)
	o.Close()
	want := []string{
		a.String() + ":\x00first",
		a.String() + ":\x01a2", // a1 replaced, in a1's place
		b.String() + ":\x00b1",
		b.String() + ":\x01b-ring",
		a.String() + ":\x00a-req",
	}
	if !slices.Equal(g.sent, want) {
		t.Errorf("sent %q\nwant %q", g.sent, want)
	}
	if !slices.Equal(g.bcasts, []string{"s2"}) {
		t.Errorf("broadcasts %q, want only the latest state", g.bcasts)
	}
}

func TestOutboxRefusesPastItsLimit(t *testing.T) {
	g := &blockingGossip{release: make(chan struct{}), started: make(chan struct{}, outboxLimit+8)}
	o := NewOutbox(g, nil)
	defer func() { close(g.release); o.Close() }()
	if err := o.GossipUnicast(1, []byte{msgSpaceRequest}); err != nil {
		t.Fatal(err)
	}
	<-g.started // the sender holds that one; the queue is empty again
	for i := range outboxLimit {
		kind := msgSpaceRequest
		if i == 0 {
			kind = msgRingUpdate // to peer 2
		}
		if err := o.GossipUnicast(mesh.PeerName(i+2), []byte{kind}); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := o.GossipUnicast(1, []byte{msgSpaceRequest}); !errors.Is(err, errOutboxFull) {
		t.Fatalf("past the limit: %v, want errOutboxFull", err)
	}
	if err := o.GossipUnicast(2, []byte{msgRingUpdate}); err != nil {
		t.Fatalf("a ring update to a queued peer is not new: %v", err)
	}
	if o.Dropped() != 1 {
		t.Fatalf("dropped %d, want 1", o.Dropped())
	}
}
