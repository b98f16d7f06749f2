package liveness

import (
	"net"
	"slices"
	"sync"
	"time"

	"github.com/weaveworks/mesh"
)

// seedsRefresh bounds how often MeshSeeds rebuilds its list while the set
// of peer names is unchanged: mesh.NewStatus walks the whole topology and
// asks every overlay for diagnostics.
const seedsRefresh = 10 * time.Second

// MeshSeeds returns a Config.Seeds that lists every peer in r's topology
// at the IP its neighbours connect to it from (or it listens on): the
// mesh's known peers are the liveness seeds, there is no list of its own.
// The port is the detector's own, like mesh's connection maker, which
// also dials every peer at its own port.
func MeshSeeds(r *mesh.Router) func() []Seed {
	var mu sync.Mutex
	var names []mesh.PeerName
	var seeds []Seed
	var at time.Time
	return func() []Seed {
		mu.Lock()
		defer mu.Unlock()
		now := peerNames(r)
		if slices.Equal(now, names) && time.Since(at) < seedsRefresh {
			return seeds
		}
		names, seeds, at = now, statusSeeds(r), time.Now()
		return seeds
	}
}

func peerNames(r *mesh.Router) []mesh.PeerName {
	var out []mesh.PeerName
	for _, d := range r.Peers.Descriptions() {
		out = append(out, d.Name)
	}
	slices.Sort(out)
	return out
}

func statusSeeds(r *mesh.Router) []Seed {
	st := mesh.NewStatus(r)
	seen := map[string]bool{st.Name: true}
	var out []Seed
	for _, p := range st.Peers {
		for _, c := range p.Connections {
			host, _, err := net.SplitHostPort(c.Address)
			if err != nil || seen[c.Name] || host == "" {
				continue
			}
			seen[c.Name] = true
			out = append(out, Seed{Name: c.Name, Host: host})
		}
	}
	return out
}
