package router

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weaveworks/mesh"
)

// MAC is an Ethernet address used as a map key (no allocation on lookup).
type MAC [6]byte

// String renders the MAC in the usual colon-separated form.
func (m MAC) String() string { return net.HardwareAddr(m[:]).String() }

// macAt returns the MAC at frame[off:off+6]; the caller checks the length.
func macAt(frame []byte, off int) MAC {
	var m MAC
	copy(m[:], frame[off:off+6])
	return m
}

// macEntry is one cache entry. Its fields are atomics so that the hot path
// can refresh an existing entry under the cache's read lock.
type macEntry struct {
	peer     atomic.Uint64 // mesh.PeerName
	lastSeen atomic.Int64  // unix nanoseconds
}

// addResult tells the caller what Add did.
type addResult int

const (
	macFresh    addResult = iota // entry refreshed (same peer)
	macNew                       // new entry created
	macMoved                     // entry moved to the new peer
	macConflict                  // entry belongs to another peer; frame must be dropped
)

// macCache maps MAC addresses to the peer they were last seen behind.
//
// Rules:
//   - Add (captured frames, peer = ourself): a MAC not cached, or cached
//     for ourself, is (re)stamped. A MAC cached for ANOTHER peer means the
//     frame most likely looped back into our bridge (we injected it, the
//     bridge flooded it, we captured it again), so the frame is dropped
//     (macConflict) — unless that entry was last refreshed more than
//     moveGrace ago, in which case the container has moved to this host
//     and the entry moves to us (macMoved).
//   - AddForced (frames arriving over an overlay): the entry always takes
//     the sending peer; a change of peer is reported as macMoved so the
//     caller logs it once per move.
//
// Refreshing an existing entry does not allocate; lastSeen is stored only
// when it changed by at least refreshEvery, to keep cache lines quiet.
type macCache struct {
	maxAge       time.Duration
	moveGrace    time.Duration
	refreshEvery time.Duration
	now          func() time.Time

	mu      sync.RWMutex
	entries map[MAC]*macEntry
}

func newMACCache(maxAge, moveGrace time.Duration, now func() time.Time) *macCache {
	refresh := min(moveGrace/4, maxAge/10)
	return &macCache{
		maxAge:       maxAge,
		moveGrace:    moveGrace,
		refreshEvery: refresh,
		now:          now,
		entries:      make(map[MAC]*macEntry),
	}
}

// Add records mac as being behind peer for a captured frame.
func (c *macCache) Add(mac MAC, peer mesh.PeerName) addResult {
	return c.add(mac, peer, false)
}

// AddForced records mac as being behind peer for a forwarded frame.
func (c *macCache) AddForced(mac MAC, peer mesh.PeerName) addResult {
	return c.add(mac, peer, true)
}

func (c *macCache) add(mac MAC, peer mesh.PeerName, forced bool) addResult {
	now := c.now().UnixNano()
	c.mu.RLock()
	e := c.entries[mac]
	c.mu.RUnlock()
	if e == nil {
		return c.insert(mac, peer, now)
	}
	if mesh.PeerName(e.peer.Load()) == peer {
		if now-e.lastSeen.Load() >= int64(c.refreshEvery) {
			e.lastSeen.Store(now)
		}
		return macFresh
	}
	if !forced && now-e.lastSeen.Load() < int64(c.moveGrace) {
		return macConflict
	}
	e.peer.Store(uint64(peer))
	e.lastSeen.Store(now)
	return macMoved
}

func (c *macCache) insert(mac MAC, peer mesh.PeerName, now int64) addResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[mac]; ok {
		// Lost a race with another inserter; treat as a refresh of theirs.
		c.entries[mac].peer.Store(uint64(peer))
		c.entries[mac].lastSeen.Store(now)
		return macFresh
	}
	e := &macEntry{}
	e.peer.Store(uint64(peer))
	e.lastSeen.Store(now)
	c.entries[mac] = e
	return macNew
}

// Lookup returns the peer mac was last seen behind.
func (c *macCache) Lookup(mac MAC) (mesh.PeerName, bool) {
	c.mu.RLock()
	e := c.entries[mac]
	c.mu.RUnlock()
	if e == nil {
		return mesh.UnknownPeerName, false
	}
	return mesh.PeerName(e.peer.Load()), true
}

// Expire removes entries not seen for maxAge and returns how many it removed.
func (c *macCache) Expire() int {
	cutoff := c.now().Add(-c.maxAge).UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for mac, e := range c.entries {
		if e.lastSeen.Load() < cutoff {
			delete(c.entries, mac)
			n++
		}
	}
	return n
}

// DeletePeer removes every entry behind peer and returns how many it removed.
func (c *macCache) DeletePeer(peer mesh.PeerName) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for mac, e := range c.entries {
		if mesh.PeerName(e.peer.Load()) == peer {
			delete(c.entries, mac)
			n++
		}
	}
	return n
}

// macSnapshot is one entry copied out of the cache.
type macSnapshot struct {
	MAC      MAC
	Peer     mesh.PeerName
	LastSeen time.Time
}

// Snapshot copies all entries out.
func (c *macCache) Snapshot() []macSnapshot {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]macSnapshot, 0, len(c.entries))
	for mac, e := range c.entries {
		out = append(out, macSnapshot{
			MAC:      mac,
			Peer:     mesh.PeerName(e.peer.Load()),
			LastSeen: time.Unix(0, e.lastSeen.Load()).UTC(),
		})
	}
	return out
}
