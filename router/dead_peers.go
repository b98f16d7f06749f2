package router

import (
	"maps"

	"github.com/weaveworks/mesh"
)

// deadSet is the set of peers the liveness detector declared dead. It is
// replaced, never modified, so the hot path reads it without locking; nil
// (the usual case) costs one atomic load per frame.
type deadSet map[mesh.PeerName]struct{}

// SetPeerDead records that peer is dead (dead true) or alive again. While
// a peer is dead the router sends it nothing, unicast or broadcast, and
// relays nothing through it, even where mesh's routes still name it (the
// daemon also closes mesh's connection to it, and routes follow once every
// survivor has done so). Marking a peer dead also forgets the MAC
// addresses learnt behind it, so frames to them are flooded to the living
// until the MAC is heard again.
func (r *NetworkRouter) SetPeerDead(peer mesh.PeerName, dead bool) {
	r.deadMu.Lock()
	defer r.deadMu.Unlock()
	cur := r.dead.Load()
	_, was := (*cur)[peer]
	if was == dead {
		return
	}
	next := deadSet{}
	maps.Copy(next, *cur)
	if dead {
		next[peer] = struct{}{}
	} else {
		delete(next, peer)
	}
	r.dead.Store(&next)
	if !dead {
		r.log.Info("peer alive again; sending to it", "peer", peer.String())
		return
	}
	n := r.mac.DeletePeer(peer)
	r.log.Info("peer declared dead; not sending to it, MACs purged", "peer", peer.String(), "macs", n)
}

// PeerDead reports whether peer is marked dead.
func (r *NetworkRouter) PeerDead(peer mesh.PeerName) bool {
	_, dead := (*r.dead.Load())[peer]
	return dead
}

// deadPeer is PeerDead for the hot path.
func (r *NetworkRouter) deadPeer(peer mesh.PeerName) bool {
	d := *r.dead.Load()
	if len(d) == 0 {
		return false
	}
	_, dead := d[peer]
	return dead
}
