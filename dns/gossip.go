package dns

import (
	"fmt"

	"github.com/weaveworks/mesh"
)

var _ mesh.Gossiper = (*Nameserver)(nil)

// Gossip returns every entry we hold (mesh sends it periodically).
func (n *Nameserver) Gossip() mesh.GossipData {
	n.mu.Lock()
	defer n.mu.Unlock()
	return &GossipData{Timestamp: n.now(), Entries: append(Entries(nil), n.entries...)}
}

// OnGossipUnicast accepts nothing: 2.8.1 never unicasts on this channel.
func (n *Nameserver) OnGossipUnicast(mesh.PeerName, []byte) error { return nil }

// OnGossipBroadcast merges a broadcast and returns it for relaying.
func (n *Nameserver) OnGossipBroadcast(src mesh.PeerName, msg []byte) (mesh.GossipData, error) {
	g, _, err := n.receive(msg)
	if err != nil {
		return nil, fmt.Errorf("DNS broadcast from %s: %w", src, err)
	}
	return g, nil
}

// OnGossip merges periodic gossip and returns what was new to us.
func (n *Nameserver) OnGossip(msg []byte) (mesh.GossipData, error) {
	_, delta, err := n.receive(msg)
	if err != nil {
		return nil, fmt.Errorf("DNS gossip: %w", err)
	}
	if delta == nil {
		return nil, nil // a nil *GossipData would not be a nil interface
	}
	return delta, nil
}

// receive decodes, checks and merges a payload. It returns the accepted
// gossip and the delta (what changed here, nil if nothing).
func (n *Nameserver) receive(msg []byte) (*GossipData, *GossipData, error) {
	g, err := DecodeGossip(msg)
	if err != nil {
		return nil, nil, err
	}
	now := n.now()
	window := int64(GossipWindow.Seconds())
	if skew := g.Timestamp - now; skew > window || skew < -window {
		return nil, nil, fmt.Errorf("clock skew of %ds with the sender exceeds %ds", skew, window)
	}
	g.Entries.filter(func(e *Entry) bool { return n.cfg.IsKnownPeer(e.Origin) })
	n.mu.Lock()
	own := n.reassertLocked(&g.Entries, now)
	changed := n.entries.merge(g.Entries)
	n.mu.Unlock()
	if len(own) > 0 {
		if err := n.changed(own); err != nil {
			n.log.Warn("cannot persist DNS entries", "err", err)
		}
	}
	changed = append(changed, own...)
	if len(changed) == 0 {
		return g, nil, nil
	}
	return g, &GossipData{Timestamp: now, Entries: changed}, nil
}

// reassertLocked handles incoming entries that claim to be ours: we are
// their only authority. One we do not have (a previous incarnation's)
// that others think live is tombstoned; one whose liveness others see
// differently gets our view back with a higher version. Such entries are
// removed from incoming and our corrections returned, to be broadcast.
func (n *Nameserver) reassertLocked(incoming *Entries, now int64) Entries {
	var fixed Entries
	incoming.filter(func(e *Entry) bool {
		if e.Origin != n.cfg.OurName {
			return true
		}
		i, found := n.entries.find(e)
		switch {
		case !found && e.Live():
			t := *e
			t.Version, t.Tombstone = e.Version+1, now
			n.entries = append(n.entries[:i], append(Entries{t}, n.entries[i:]...)...)
			fixed = append(fixed, t)
		case found && e.Version >= n.entries[i].Version && e.Live() != n.entries[i].Live():
			n.entries[i].Version = e.Version + 1
			fixed = append(fixed, n.entries[i])
		default:
			return true
		}
		return false
	})
	return fixed
}
