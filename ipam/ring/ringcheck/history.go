package ringcheck

import (
	"fmt"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

// History checks the rule every 2.8.1 merge relies on: one version of a
// token has one content. Two replicas showing the same token at the same
// version with different owners or free counts mean some change was made
// without a version bump, so a peer holding the older content keeps it.
//
// Concurrent rmpeer of one dead peer by two survivors is the exception
// 2.8.1 has too: both move its tokens to themselves at version + 100.
// TakeoverRaces tolerates owner conflicts at versions of 100 and more
// (2.8.1 settles them by free count, we by our tentative-takeover rule);
// a free count changed without a bump is still reported.
type History struct {
	TakeoverRaces bool
	seen          map[tokenVersion]content
}

type tokenVersion struct {
	token   address.Address
	version uint32
}

type content struct {
	peer mesh.PeerName
	free address.Count
	by   mesh.PeerName // the replica that showed it first
}

// Observe records every entry of r and reports the first one whose
// content differs from what an earlier replica showed at that version.
func (h *History) Observe(r Ring) error {
	if h.seen == nil {
		h.seen = map[tokenVersion]content{}
	}
	for _, e := range r.Entries {
		k := tokenVersion{e.Token, e.Version}
		c, ok := h.seen[k]
		if !ok {
			h.seen[k] = content{peer: e.Peer, free: e.Free, by: r.Peer}
			continue
		}
		if c.peer != e.Peer && h.TakeoverRaces && e.Version >= 100 {
			continue
		}
		if c.peer != e.Peer || c.free != e.Free {
			return fmt.Errorf("token %s v%d: replica of %s shows owner %s free %d, replica of %s showed owner %s free %d",
				e.Token, e.Version, r.Peer, e.Peer, e.Free, c.by, c.peer, c.free)
		}
	}
	return nil
}
