package liveness

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/weaveworks/mesh"
)

func meshRouter(t *testing.T, host string, port int, name mesh.PeerName) *mesh.Router {
	t.Helper()
	r, err := mesh.NewRouter(mesh.Config{Host: host, Port: port, ProtocolMinVersion: mesh.ProtocolMaxVersion,
		ConnLimit: 8, TrustedSubnets: []*net.IPNet{}}, name, name.String(), mesh.NullOverlay{},
		log.New(discard{}, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	t.Cleanup(func() { _ = r.Stop() })
	return r
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// The seeds follow mesh's topology as soon as its routes change, not on
// the minute-long refresh that a settled topology waits for.
func TestMeshSeedsFollowTopology(t *testing.T) {
	prefix := fmt.Sprintf("127.%d.%d.", 100+rand.IntN(100), rand.IntN(250))
	port := freePort(t, prefix+"1")
	a := meshRouter(t, prefix+"1", port, mesh.PeerName(0xaa0000000001))
	seeds := MeshSeeds(a)
	if s := seeds(); len(s) != 0 {
		t.Fatalf("seeds of a lone router: %v", s)
	}
	_ = meshRouter(t, prefix+"2", port, mesh.PeerName(0xaa0000000002))
	a.ConnectionMaker.InitiateConnections([]string{net.JoinHostPort(prefix+"2", strconv.Itoa(port))}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	want := Seed{Name: mesh.PeerName(0xaa0000000002).String(), Host: prefix + "2"}
	for {
		s := seeds()
		if len(s) == 1 && s[0] == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("seeds after connecting: %v, want [%v]", s, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
