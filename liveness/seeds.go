package liveness

import (
	"net"

	"github.com/weaveworks/mesh"
)

// MeshSeeds returns a Config.Seeds that lists every peer in r's topology
// at the IP its neighbours connect to it from (or it listens on): the
// mesh's known peers are the liveness seeds, there is no list of its own.
// The port is the detector's own, like mesh's connection maker, which
// also dials every peer at its own port.
func MeshSeeds(r *mesh.Router) func() []Seed {
	return func() []Seed {
		st := mesh.NewStatus(r)
		seen := map[string]bool{st.Name: true}
		var out []Seed
		add := func(name, addr string) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil || seen[name] || host == "" {
				return
			}
			seen[name] = true
			out = append(out, Seed{Name: name, Host: host})
		}
		for _, p := range st.Peers {
			for _, c := range p.Connections {
				add(c.Name, c.Address)
			}
		}
		return out
	}
}
