package ipam

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkAllocate: one peer, sequential allocations through the actor.
// ns/op is the latency of one allocation; allocs/s the throughput.
func BenchmarkAllocate(b *testing.B) {
	n := newMemNet(b, 1)
	a := n.addPeer(1, func(c *Config) { c.Init = Init{Mode: InitConsensus, Quorum: 1}; c.CheckInvariants = false })
	ctx := context.Background()
	if err := a.Prime(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("c%d", i)
		c, err := a.Allocate(ctx, id, universe12)
		if err != nil {
			b.Fatal(err)
		}
		if i%100000 == 99999 { // stay inside the /12
			for j := i - 99999; j <= i; j++ {
				_ = a.Delete(fmt.Sprintf("c%d", j))
			}
		}
		_ = c
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "allocs/s")
}

// BenchmarkTimeToConsensus: N in-process allocators over the in-memory
// gossip; one asks for the ring, and the clock stops when every peer has it.
func BenchmarkTimeToConsensus(b *testing.B) {
	for _, peers := range []int{3, 10, 50} {
		b.Run(fmt.Sprintf("peers=%d", peers), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				n := newMemNet(b, uint64(i))
				var as []*Allocator
				for p := 1; p <= peers; p++ {
					as = append(as, n.addPeer(p, func(c *Config) {
						c.Init = Init{Mode: InitConsensus, Quorum: uint(peers)/2 + 1}
						c.CheckInvariants = false
					}))
				}
				b.StartTimer()
				if err, ok := drive(n, 50, func() error { return as[0].Prime(context.Background()) }); !ok || err != nil {
					b.Fatalf("no consensus: %v", err)
				}
				n.pump()
				for _, a := range as {
					if len(a.Status().Entries) == 0 {
						b.Fatalf("peer %s has no ring", a.cfg.OurName)
					}
				}
				b.StopTimer()
				for _, a := range as {
					a.Stop()
				}
				b.StartTimer()
			}
		})
	}
}
