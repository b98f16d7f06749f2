package paxos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weaveworks/mesh"
)

// simulate runs n electors exchanging gossip states in random order with
// message loss, until every node sees consensus; it returns the rounds used.
func simulate(t testing.TB, n int, quorum uint, loss float64, seed uint64) int {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 1))
	nodes := make([]*Node, n)
	for i := range nodes {
		nodes[i] = NewNode(mesh.PeerName(i+1), mesh.PeerUID(100+i), quorum)
	}
	// Two nodes start the election concurrently (duelling proposers).
	nodes[0].Propose()
	nodes[n-1].Propose()
	for round := 1; round < 1000; round++ {
		for i := range nodes {
			nodes[i].Think()
			for j := range nodes {
				if i != j && rnd.Float64() >= loss {
					nodes[j].Update(nodes[i].GossipState())
				}
			}
		}
		var agreed []Value
		for _, nd := range nodes {
			if v, ok := nd.Consensus(); ok {
				agreed = append(agreed, v.Value)
			}
		}
		for _, v := range agreed {
			if !slices.Equal(v, agreed[0]) {
				t.Fatalf("nodes decided different values: %v", agreed)
			}
		}
		if len(agreed) == n {
			return round
		}
	}
	t.Fatalf("no consensus among %d nodes", n)
	return 0
}

func TestConsensusWithLoss(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 10} {
		for seed := uint64(0); seed < 20; seed++ {
			t.Run(fmt.Sprintf("n%d/seed%d", n, seed), func(t *testing.T) {
				simulate(t, n, uint(n)/2+1, 0.3, seed)
			})
		}
	}
}

func TestProposalOrder(t *testing.T) {
	a := ProposalID{Round: 1, Proposer: NodeID{Name: 2, UID: 1}}
	b := ProposalID{Round: 1, Proposer: NodeID{Name: 2, UID: 2}}
	c := ProposalID{Round: 2, Proposer: NodeID{Name: 1, UID: 1}}
	if !a.Less(b) || !b.Less(c) || c.Less(a) || a.Less(a) {
		t.Fatal("proposal order wrong")
	}
}

func TestObserverNeverVotes(t *testing.T) {
	o := NewObserver(9, 9)
	o.Propose()
	if o.Think() || o.GossipState() != nil || o.IsElector() {
		t.Fatal("observer voted")
	}
	e := NewNode(1, 1, 1)
	e.Propose()
	e.Think()
	o.Update(e.GossipState())
	if o.KnownNodes() != 1 {
		t.Fatalf("observer knows %d nodes", o.KnownNodes())
	}
}

// BenchmarkConsensus measures in-process time to consensus (the issue's
// "time to consensus for 3, 10 and 50 peers").
func BenchmarkConsensus(b *testing.B) {
	for _, n := range []int{3, 10, 50} {
		b.Run(fmt.Sprintf("peers=%d", n), func(b *testing.B) {
			rounds := 0
			for i := 0; i < b.N; i++ {
				rounds += simulate(b, n, uint(n)/2+1, 0, uint64(i))
			}
			b.ReportMetric(float64(rounds)/float64(b.N), "gossip-rounds/op")
		})
	}
}
