package ipam

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

// Healing after a takeover of a peer that was only cut off.
//
// rmpeer (or --ipalloc-reclaim-after) moves a peer's tokens to another
// peer with a version bump. If the peer was alive behind a partition, it
// comes back still holding containers in that space. Weave 2.8.1 refuses
// the newer ring ("newer version of a token we own and use") and both
// peers go on allocating from the same range. Here the returning peer
// accepts the cluster's ring (ring.SetYield) and each address it still
// holds outside its own space becomes an orphan: it asks the new owner
// for that one address (the space request 2.8.1 peers answer too) until
// it owns it again. An owner that refuses has given the address out
// meanwhile: two containers hold it, and that conflict is reported as an
// ERROR line, weave_ipam_conflicts and the status until one of them lets
// it go. The taking-over side allocates and donates from space it took
// over only when nothing else is free, so that, as long as the range is
// not full, what the cut-off peer held is still there to be claimed back.

// orphan is an address a container here holds in another peer's space.
type orphan struct {
	ident    string
	owner    mesh.PeerName
	asked    time.Time
	conflict bool // the owner refused: it gave the address out meanwhile
}

// ConflictStatus is an address held here that its owner gave out too.
type ConflictStatus struct {
	Addr      string
	Container string
	Owner     string
}

// checkOrphans finds addresses held here that the ring gives to another
// peer, asks each owner (at most once a tick) to hand them back, and logs
// those it got back.
func (a *Allocator) checkOrphans() {
	if a.ring.Empty() || a.shutdown {
		return
	}
	now := a.cfg.Clock.Now()
	held := map[address.Address]bool{}
	for ident, cs := range a.owned {
		for _, c := range cs {
			if !a.cfg.Universe.Range().Contains(c.Addr) || a.space.Owns(c.Addr) {
				continue
			}
			owner := a.ring.Owner(c.Addr)
			if owner == a.cfg.OurName || owner == mesh.UnknownPeerName {
				continue // ours (a takeover awaiting its acks): claimRecorded takes it
			}
			held[c.Addr] = true
			o := a.orphans[c.Addr]
			if o == nil || o.owner != owner {
				o = &orphan{ident: ident, owner: owner}
				a.orphans[c.Addr] = o
				a.log.Warn("address held here lies in space another peer took over (we were cut off); asking for it back",
					"addr", c.Addr, "container", ident, "owner", a.peerLabel(owner))
			}
			if now.Sub(o.asked) >= a.cfg.TickInterval && a.cfg.IsKnownPeer(owner) {
				o.asked = now
				a.unicast(owner, encodeRange(msgSpaceRequest, address.NewRange(c.Addr, 1)))
			}
		}
	}
	for addr, o := range a.orphans {
		if held[addr] {
			continue
		}
		delete(a.orphans, addr)
		switch {
		case a.space.IsAllocated(addr):
			a.log.Info("address claimed back from the peer that took over our space", "addr", addr, "container", o.ident, "from", a.peerLabel(o.owner))
		case o.conflict:
			a.log.Info("address conflict resolved: no longer held here", "addr", addr, "container", o.ident)
		}
	}
}

// orphanRefused handles a space request denial from src: each orphan of
// src's in r is a conflict.
func (a *Allocator) orphanRefused(src mesh.PeerName, r address.Range) {
	for addr, o := range a.orphans {
		if o.conflict || o.owner != src || !r.Contains(addr) {
			continue
		}
		o.conflict = true
		a.conflictsSeen++
		a.log.Error("IPAM conflict: an address held here was given out by the peer that took over our space while we were cut off; "+
			"two containers hold it: remove one of them", "addr", addr, "container", o.ident, "owner", a.peerLabel(src))
	}
}

func (a *Allocator) conflicts() []ConflictStatus {
	var out []ConflictStatus
	for addr, o := range a.orphans {
		if o.conflict {
			out = append(out, ConflictStatus{Addr: addr.String(), Container: o.ident, Owner: a.peerLabel(o.owner)})
		}
	}
	slices.SortFunc(out, func(x, y ConflictStatus) int { return strings.Compare(x.Addr, y.Addr) })
	return out
}

// healProblem is the status problem while orphans exist ("" when none).
func (a *Allocator) healProblem() string {
	if c := a.conflicts(); len(c) > 0 {
		var parts []string
		for _, x := range c {
			parts = append(parts, fmt.Sprintf("%s (container %s, given out by %s)", x.Addr, x.Container, x.Owner))
		}
		return fmt.Sprintf("%d address(es) held here were also given out by the peer that took over our space: %s; remove one holder of each",
			len(c), strings.Join(parts, ", "))
	}
	if n := len(a.orphans); n > 0 {
		return fmt.Sprintf("claiming back %d address(es) held here from the peer(s) that took over our space", n)
	}
	return ""
}

// preferFresh lists the parts of r to try in turn: first those outside
// space we took over from a dead peer, then r itself.
func (a *Allocator) preferFresh(r address.Range) []address.Range {
	if len(a.reclaimed) == 0 {
		return []address.Range{r}
	}
	return append(subtractAll([]address.Range{r}, a.reclaimed), r)
}

// allocateIn allocates the lowest free address of r, preferring space we
// did not take over from a dead peer.
func (a *Allocator) allocateIn(r address.Range) (address.Address, bool) {
	for _, x := range a.preferFresh(r) {
		if addr, ok := a.space.Allocate(x); ok {
			return addr, true
		}
	}
	return 0, false
}

// donateIn is space.Donate preferring space we did not take over.
func (a *Allocator) donateIn(r address.Range) (address.Range, bool) {
	for _, x := range a.preferFresh(r) {
		if given, ok := a.space.Donate(x); ok {
			return given, true
		}
	}
	return address.Range{}, false
}
