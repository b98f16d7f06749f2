package liveness

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weaveworks/mesh"
)

// seedsRefresh bounds how long MeshSeeds keeps its list while mesh's
// routes have not changed (the list is rebuilt after every route
// calculation that follows a topology change): mesh.NewStatus walks the
// whole topology and asks every overlay for diagnostics.
const seedsRefresh = time.Minute

// seedsMinAge bounds how often it is rebuilt while the topology changes
// (every route calculation, during a cold start of hundreds of routers):
// a new peer joins us itself, our seeds matter for the peers that do not.
// A router without seeds yet (just started) rebuilds on every change.
const seedsMinAge = 10 * time.Second

// MeshSeeds returns a Config.Seeds that lists every peer in r's topology
// at the IP its neighbours connect to it from (or it listens on): the
// mesh's known peers are the liveness seeds, there is no list of its own.
// The port is the detector's own, like mesh's connection maker, which
// also dials every peer at its own port. The list is rebuilt only when
// mesh recalculated its routes since it was built, at most every
// seedsMinAge, and otherwise after seedsRefresh: a settled topology costs
// nothing per join round.
func MeshSeeds(r *mesh.Router) func() []Seed {
	var mu sync.Mutex
	var seeds []Seed
	var at time.Time
	var changed atomic.Bool
	changed.Store(true)
	r.Routes.OnChange(func() { changed.Store(true) })
	return func() []Seed {
		mu.Lock()
		defer mu.Unlock()
		age := time.Since(at)
		if (len(seeds) > 0 && age < seedsMinAge) || (!changed.Load() && age < seedsRefresh) {
			return seeds
		}
		changed.Store(false)
		seeds, at = statusSeeds(r), time.Now()
		return seeds
	}
}

// statusSeeds lists each peer once per underlay family it is seen at (the
// first address of that family): a detector joins a peer only at an
// address of its own family (sameFamily), and a dual-stack peer has one
// of each. In a mesh of one family that is one seed per peer.
func statusSeeds(r *mesh.Router) []Seed {
	st := mesh.NewStatus(r)
	type key struct {
		name string
		v4   bool
	}
	seen := map[key]bool{}
	var out []Seed
	for _, p := range st.Peers {
		for _, c := range p.Connections {
			host, _, err := net.SplitHostPort(c.Address)
			if err != nil || c.Name == st.Name || host == "" {
				continue
			}
			k := key{c.Name, true}
			if a, err := netip.ParseAddr(host); err == nil {
				k.v4 = a.Unmap().Is4()
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, Seed{Name: c.Name, Host: host})
		}
	}
	return out
}
