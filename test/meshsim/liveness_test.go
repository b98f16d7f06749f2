package meshsim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/liveness"
	"github.com/seedf75a49c6/weave/test/meshsim"
)

// TestKilledPeerDeadEverywhereAndUnrouted: five routers with discovery on
// loopback addresses fill in a full mesh from a chain; liveness joins
// through mesh's peers; a killed peer is declared dead by all, dropped by
// their routers and mesh routes, and its IPAM space is reclaimed.
func TestKilledPeerDeadEverywhereAndUnrouted(t *testing.T) {
	s := meshsim.New(t, 5, meshsim.Options{
		Loopback: true, PeerDiscovery: true, Liveness: true, IPAM: true, ReclaimAfter: time.Second,
	})
	for i := 1; i < 5; i++ {
		s.Connect(t, i, i-1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range []struct {
		what string
		cond func() string
	}{{"topology", s.TopologyProblem}, {"liveness", s.LivenessProblem}} {
		if _, err := meshsim.Await(ctx, c.what, c.cond); err != nil {
			t.Fatal(err)
		}
	}
	// Discovery fills the chain in: p0 comes to reach everyone directly.
	if _, err := meshsim.Await(ctx, "full mesh from a chain", func() string {
		for _, p := range s.Peers[1:] {
			if hop, _ := s.Peers[0].Mesh.Routes.Unicast(p.Name); hop != p.Name {
				return fmt.Sprintf("p0 reaches %s via %s", p.NickName, hop)
			}
		}
		return ""
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.PrimeIPAM(ctx, 0); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 5; i++ {
		if err := s.Allocate(ctx, i, fmt.Sprintf("c%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := meshsim.Await(ctx, "IPAM ring", s.RingProblem); err != nil {
		t.Fatal(err)
	}
	s.Kill(3)
	for _, c := range []struct {
		what string
		cond func() string
	}{{"liveness after kill", s.LivenessProblem}, {"topology after kill", s.TopologyProblem}, {"ring after kill", s.RingProblem}} {
		d, err := meshsim.Await(ctx, c.what, c.cond)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %v", c.what, d.Round(time.Millisecond))
	}
	requireDeadEverywhere(t, s, 3)
}

func requireDeadEverywhere(t *testing.T, s *meshsim.Sim, k int) {
	t.Helper()
	for _, p := range s.Alive() {
		if !p.Router.PeerDead(s.Peers[k].Name) {
			t.Errorf("%s's router still sends to the killed peer", p.NickName)
		}
		if st := p.Live.Get(s.Peers[k].Name.String()); st.State != liveness.Dead {
			t.Errorf("%s sees the killed peer %v", p.NickName, st.State)
		}
	}
}
