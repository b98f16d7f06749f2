package ipam

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

type quietLogger struct{}

func (quietLogger) Printf(string, ...interface{}) {} // mesh is chatty

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestOverRealMesh runs three allocators over real weaveworks/mesh routers
// on loopback TCP: the IPallocation channel carries our gossip, consensus
// is reached, and the three allocations are distinct. (mesh.Router cannot
// be fully stopped, so its listener lives until the test binary exits.)
func TestOverRealMesh(t *testing.T) {
	if testing.Short() {
		t.Skip("uses loopback TCP")
	}
	const n = 3
	var allocs []*Allocator
	var ports []int
	for i := 1; i <= n; i++ {
		port := freePort(t)
		ports = append(ports, port)
		name := mesh.PeerName(0x0a0000000000 + uint64(i))
		gi := 2 * time.Second
		router, err := mesh.NewRouter(mesh.Config{Host: "127.0.0.1", Port: port, ConnLimit: 10, ProtocolMinVersion: 1,
			PeerDiscovery: true, GossipInterval: &gi}, name, fmt.Sprintf("h%d", i), nil, quietLogger{})
		if err != nil {
			t.Fatal(err)
		}
		peers := router.Peers
		a, err := New(Config{OurName: name, OurUID: router.Ourself.UID, OurNickname: fmt.Sprintf("h%d", i),
			Init: Init{Mode: InitConsensus, Quorum: n/2 + 1}, CheckInvariants: true, TickInterval: 500 * time.Millisecond,
			IsKnownPeer: func(p mesh.PeerName) bool { return peers.Fetch(p) != nil }})
		if err != nil {
			t.Fatal(err)
		}
		g, err := router.NewGossip("IPallocation", a.Gossiper())
		if err != nil {
			t.Fatal(err)
		}
		a.SetGossip(g)
		a.Start()
		t.Cleanup(a.Stop)
		router.Start()
		t.Cleanup(func() { _ = router.Stop() })
		if i > 1 {
			router.ConnectionMaker.InitiateConnections([]string{fmt.Sprintf("127.0.0.1:%d", ports[0])}, false)
		}
		allocs = append(allocs, a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	got := make([]address.CIDR, n)
	errs := make([]error, n)
	for i, a := range allocs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = a.Allocate(ctx, fmt.Sprintf("c%d", i), universe12)
		}()
	}
	wg.Wait()
	seen := map[address.Address]bool{}
	for i := range allocs {
		if errs[i] != nil {
			t.Fatalf("peer %d: %v", i+1, errs[i])
		}
		if seen[got[i].Addr] {
			t.Fatalf("duplicate %v", got)
		}
		seen[got[i].Addr] = true
	}
	t.Logf("allocated %v over real mesh", got)
}
