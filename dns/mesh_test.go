package dns

import (
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/test/meshsim"
	"github.com/weaveworks/mesh"
)

func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Three real mesh routers in a line, p0 - p1 - p2, where p1 runs no
// nameserver (like 2.8.1 with --no-dns): names from p0 still reach p2,
// because mesh relays an unknown channel, and so do tombstones.
func TestLiveMeshPropagation(t *testing.T) {
	s := meshsim.New(t, 3, meshsim.Options{})
	ns := map[int]*Nameserver{}
	for _, i := range []int{0, 2} {
		p := s.Peers[i]
		n, err := New(Config{OurName: p.Name, Logger: quiet,
			IsKnownPeer: func(x mesh.PeerName) bool { return p.Mesh.Peers.Fetch(x) != nil }})
		if err != nil {
			t.Fatal(err)
		}
		g, err := p.Mesh.NewGossip(ChannelName, n)
		if err != nil {
			t.Fatal(err)
		}
		n.SetGossip(g)
		ns[i] = n
	}
	s.Connect(t, 0, 1)
	s.Connect(t, 1, 2)
	s.AwaitConverged(t)
	if err := ns[0].AddEntry("db.weave.local.", "c1", ip("10.32.0.1")); err != nil {
		t.Fatal(err)
	}
	await(t, "db on p2", func() bool { return len(ns[2].Lookup("db.weave.local.")) == 1 })
	if err := ns[2].AddEntry("web.weave.local.", "c2", ip("10.32.0.2")); err != nil {
		t.Fatal(err)
	}
	await(t, "web on p0", func() bool { return len(ns[0].Lookup("web.weave.local.")) == 1 })
	if err := ns[0].ContainerDied("c1"); err != nil {
		t.Fatal(err)
	}
	await(t, "db tombstone on p2", func() bool { return len(ns[2].Lookup("db.weave.local.")) == 0 })
	e := find(t, ns[2], "db.weave.local.", s.Peers[0].Name)
	if e.Live() || e.Version != 1 {
		t.Errorf("p2 holds %+v, want the v1 tombstone", e)
	}
}
