// Package ring is the IPAM ownership CRDT: a sorted ring of tokens, each
// owning the addresses from its token up to the next token (wrapping at the
// end of the universe). Only the owner of a token changes it (except an
// administrative transfer, which bumps versions far enough to dominate), so
// replicas merge by taking the higher version of each token.
//
// The gob field names and kinds match Weave Net 2.8.1's ring (Ring{Start,
// End, Peer, Entries, Seeds}, entry{Token, Peer, Version, Free}), so rings
// gossiped by Weave routers and by ours merge into one.
package ring

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

// TransferVersionBump is added to a token's version by Transfer so that the
// transfer dominates whatever the old owner last gossiped.
const TransferVersionBump = 100

// Errors returned by Merge. Callers branch on them with errors.Is.
var (
	ErrDifferentSeeds = errors.New("IP allocation was seeded by different peers")
	ErrDifferentRange = errors.New("incompatible IP allocation ranges")
	ErrInvalid        = errors.New("ring invariant violated")
	ErrEntryInMyRange = errors.New("received token inside a range we own and use")
	ErrNewerVersion   = errors.New("received newer version of a token we own and use")
	ErrTooSmall       = errors.New("range too small for the number of peers")
)

// entry is one token. Unexported type, exported fields: the gob wire names.
type entry struct {
	Token   address.Address
	Peer    mesh.PeerName
	Version uint32
	Free    address.Count
}

// entries is named so that gob announces the type as "entries", as Weave does.
type entries []*entry

// Ring is one replica of the ring; Peer is the replica's owner.
type Ring struct {
	Start, End address.Address
	Peer       mesh.PeerName
	Entries    entries
	Seeds      []mesh.PeerName

	// tentative marks our tokens taken over by rmpeer and not yet
	// acknowledged; they yield to any competing claim that ranks higher.
	// Unexported: never gossiped or persisted by gob.
	tentative map[address.Address]bool
	// yield lets Merge accept a newer version of a token we own and use
	// that names another owner (our space was taken over while we were
	// cut off) instead of refusing the whole update; the caller then
	// claims its held addresses back. Unexported like tentative.
	yield bool
}

// SetYield makes Merge accept takeovers of tokens we still use (see
// Ring.yield); without it Merge refuses them as Weave 2.8.1 does.
func (r *Ring) SetYield(y bool) { r.yield = y }

// SetTentative sets the tokens Merge may yield to a competing takeover.
func (r *Ring) SetTentative(tokens map[address.Address]bool) { r.tentative = tokens }

// New returns an empty ring over [start, end) owned by peer.
func New(start, end address.Address, peer mesh.PeerName) *Ring {
	return &Ring{Start: start, End: end, Peer: peer}
}

// Range is the universe of the ring.
func (r *Ring) Range() address.Range { return address.Range{Start: r.Start, End: r.End} }

// Empty reports whether no token has been placed yet.
func (r *Ring) Empty() bool { return len(r.Entries) == 0 }

// Clone returns a deep copy.
func (r *Ring) Clone() *Ring {
	c := &Ring{Start: r.Start, End: r.End, Peer: r.Peer, Seeds: slices.Clone(r.Seeds)}
	c.Entries = make(entries, len(r.Entries))
	for i, e := range r.Entries {
		ce := *e
		c.Entries[i] = &ce
	}
	return c
}

// size of the universe; 0 means 2^32 is impossible for IPv4 /0, not supported.
func (r *Ring) size() address.Offset { return address.Subtract(r.End, r.Start) }

// next returns the token after entry i, wrapping to the first token + size.
func (r *Ring) distance(i int) address.Offset {
	if i+1 < len(r.Entries) {
		return address.Subtract(r.Entries[i+1].Token, r.Entries[i].Token)
	}
	return r.size() - address.Subtract(r.Entries[i].Token, r.Entries[0].Token)
}

// rangesOf returns the address ranges entry i owns (two when it wraps).
func (r *Ring) rangesOf(i int) []address.Range {
	start := r.Entries[i].Token
	if i+1 < len(r.Entries) {
		return []address.Range{{Start: start, End: r.Entries[i+1].Token}}
	}
	out := []address.Range{{Start: start, End: r.End}}
	if first := r.Entries[0].Token; first > r.Start {
		out = append(out, address.Range{Start: r.Start, End: first})
	}
	return out
}

// search returns the index of the first entry with Token >= t.
func (r *Ring) search(t address.Address) int {
	return sort.Search(len(r.Entries), func(i int) bool { return r.Entries[i].Token >= t })
}

// owningIndex returns the index of the entry whose range contains a, or -1.
func (r *Ring) owningIndex(a address.Address) int {
	if r.Empty() || a < r.Start || a >= r.End {
		return -1
	}
	i := r.search(a)
	if i < len(r.Entries) && r.Entries[i].Token == a {
		return i
	}
	if i == 0 {
		return len(r.Entries) - 1 // wraps from the last token
	}
	return i - 1
}

// Owner returns the peer owning a, or mesh.UnknownPeerName.
func (r *Ring) Owner(a address.Address) mesh.PeerName {
	if i := r.owningIndex(a); i >= 0 {
		return r.Entries[i].Peer
	}
	return mesh.UnknownPeerName
}

// CheckInvariants verifies tokens are sorted, unique, inside the universe and
// that no Free count exceeds the size of its range.
func (r *Ring) CheckInvariants() error {
	if r.End <= r.Start {
		return fmt.Errorf("check ring %s: %w: empty universe", r.Range(), ErrInvalid)
	}
	for i, e := range r.Entries {
		if e == nil {
			return fmt.Errorf("check ring: %w: nil entry %d", ErrInvalid, i)
		}
		if e.Token < r.Start || e.Token >= r.End {
			return fmt.Errorf("check ring: %w: token %s outside %s", ErrInvalid, e.Token, r.Range())
		}
		if i > 0 && r.Entries[i-1].Token >= e.Token {
			return fmt.Errorf("check ring: %w: token %s not sorted/unique", ErrInvalid, e.Token)
		}
	}
	for i, e := range r.Entries {
		if address.Offset(e.Free) > r.distance(i) {
			return fmt.Errorf("check ring: %w: token %s free %d > size %d", ErrInvalid, e.Token, e.Free, r.distance(i))
		}
	}
	return nil
}

// ClaimForPeers seeds an empty ring, halving the universe recursively into
// aligned blocks, one per peer (peers sorted and de-duplicated first).
func (r *Ring) ClaimForPeers(peers []mesh.PeerName) error {
	if !r.Empty() {
		return fmt.Errorf("claim ring for peers: ring already has %d tokens", len(r.Entries))
	}
	ps := slices.Clone(peers)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	if len(ps) == 0 {
		return fmt.Errorf("claim ring for peers: no peers")
	}
	if uint64(r.size()) < uint64(len(ps)) {
		return fmt.Errorf("claim ring %s for %d peers: %w", r.Range(), len(ps), ErrTooSmall)
	}
	r.subdivide(r.Start, r.End, ps)
	r.Seeds = ps
	return nil
}

func (r *Ring) subdivide(from, to address.Address, peers []mesh.PeerName) {
	if len(peers) == 1 {
		r.Entries = append(r.Entries, &entry{Token: from, Peer: peers[0], Free: address.Count(address.Subtract(to, from))})
		return
	}
	mid := address.Add(from, address.Subtract(to, from)/2)
	half := len(peers) / 2
	r.subdivide(from, mid, peers[:half])
	r.subdivide(mid, to, peers[half:])
}

// OwnedRanges returns the ranges owned by the replica's peer, in order.
func (r *Ring) OwnedRanges() []address.Range { return r.RangesOf(r.Peer) }

// RangesOf returns the ranges owned by peer, merged where adjacent.
func (r *Ring) RangesOf(peer mesh.PeerName) []address.Range {
	var out []address.Range
	for i, e := range r.Entries {
		if e.Peer != peer {
			continue
		}
		out = append(out, r.rangesOf(i)...)
	}
	slices.SortFunc(out, func(a, b address.Range) int { return cmp.Compare(a.Start, b.Start) })
	merged := out[:0]
	for _, x := range out {
		if n := len(merged); n > 0 && merged[n-1].End == x.Start {
			merged[n-1].End = x.End
			continue
		}
		merged = append(merged, x)
	}
	return merged
}

// GrantRangeToHost hands [start, end) of our space to peer, inserting at
// most two tokens. The range must lie inside one range we own. Versions
// change as in Weave 2.8.1, since a 2.8.1 peer holding the old entries
// keeps any entry whose version did not move: a token at start changes
// owner with version+1, or is inserted and the entry it splits gets
// version+1 (its free count set to its new size); a token of ours is
// inserted at end. Free counts are provisional until the next ReportFree,
// which the caller runs before gossiping.
func (r *Ring) GrantRangeToHost(start, end address.Address, peer mesh.PeerName) error {
	i := r.owningIndex(start)
	if i < 0 || r.Entries[i].Peer != r.Peer || end <= start {
		return fmt.Errorf("grant %s-%s to %s: not a range we own", start, end, peer)
	}
	if !containedIn(r.rangesOf(i), start, end) {
		return fmt.Errorf("grant %s-%s to %s: crosses the end of our range", start, end, peer)
	}
	tail := end
	if tail == r.End {
		tail = r.Start // the range after ours wraps to the start
	}
	tailNew := r.tokenAt(tail) < 0
	if tailNew {
		r.insert(&entry{Token: tail, Peer: r.Peer})
	}
	given := address.Count(address.Subtract(end, start))
	if j := r.tokenAt(start); j >= 0 {
		r.update(j, peer, given)
	} else {
		r.insert(&entry{Token: start, Peer: peer, Free: given})
		j = (r.tokenAt(start) + len(r.Entries) - 1) % len(r.Entries) // the entry split
		r.update(j, r.Peer, address.Count(r.distance(j)))
	}
	if k := r.tokenAt(tail); tailNew {
		r.Entries[k].Free = address.Count(r.distance(k))
	}
	return nil
}

// update changes entry i's owner and free count with a version bump.
func (r *Ring) update(i int, peer mesh.PeerName, free address.Count) {
	e := r.Entries[i]
	e.Peer, e.Free = peer, free
	e.Version++
}

func containedIn(rs []address.Range, start, end address.Address) bool {
	for _, x := range rs {
		if start >= x.Start && end <= x.End {
			return true
		}
	}
	return false
}

func (r *Ring) tokenAt(t address.Address) int {
	i := r.search(t)
	if i < len(r.Entries) && r.Entries[i].Token == t {
		return i
	}
	return -1
}

func (r *Ring) insert(e *entry) {
	i := r.search(e.Token)
	r.Entries = slices.Insert(r.Entries, i, e)
}

// clampOwnFree caps the free count of each of our tokens at its size,
// bumping the version of every token it changes (Weave 2.8.1 clamps
// without a bump, which leaves peers holding the old count at the same
// version free to keep it). Other peers' counts are theirs to change.
func (r *Ring) clampOwnFree() {
	for i, e := range r.Entries {
		if d := r.distance(i); e.Peer == r.Peer && address.Offset(e.Free) > d {
			e.Free = address.Count(d)
			e.Version++
		}
	}
}

// ReportFree updates the Free count of our tokens from freeIn (free
// addresses we hold inside a range), bumping the version of each token that
// changed. It reports whether anything changed.
func (r *Ring) ReportFree(freeIn func(address.Range) address.Count) bool {
	changed := false
	for i, e := range r.Entries {
		if e.Peer != r.Peer {
			continue
		}
		var n address.Count
		for _, x := range r.rangesOf(i) {
			n += freeIn(x)
		}
		if n != e.Free {
			e.Free = n
			e.Version++
			changed = true
		}
	}
	return changed
}

// Transfer gives every token of from to to, bumping versions by
// TransferVersionBump, and returns the ranges that moved.
func (r *Ring) Transfer(from, to mesh.PeerName) []address.Range {
	moved := r.RangesOf(from)
	for _, e := range r.Entries {
		if e.Peer == from {
			e.Peer = to
			e.Version += TransferVersionBump
		}
	}
	return moved
}

// PeerNames returns the set of peers owning tokens.
func (r *Ring) PeerNames() map[mesh.PeerName]struct{} {
	out := map[mesh.PeerName]struct{}{}
	for _, e := range r.Entries {
		out[e.Peer] = struct{}{}
	}
	return out
}

// ChoosePeersToAskForSpace returns other peers holding free space in
// [start, end), ordered by free space weighted by a random factor.
func (r *Ring) ChoosePeersToAskForSpace(start, end address.Address, rnd *rand.Rand) []mesh.PeerName {
	free := map[mesh.PeerName]address.Count{}
	want := address.Range{Start: start, End: end}
	for i, e := range r.Entries {
		if e.Peer == r.Peer || e.Free == 0 {
			continue
		}
		for _, x := range r.rangesOf(i) {
			if x.Overlaps(want) {
				free[e.Peer] += e.Free
				break
			}
		}
	}
	type cand struct {
		p mesh.PeerName
		w float64
	}
	var cs []cand
	for p, f := range free {
		cs = append(cs, cand{p, float64(f) * rnd.Float64()})
	}
	slices.SortFunc(cs, func(a, b cand) int {
		switch {
		case a.w > b.w:
			return -1
		case a.w < b.w:
			return 1
		}
		return cmp.Compare(address.Address(a.p), address.Address(b.p))
	})
	out := make([]mesh.PeerName, len(cs))
	for i, c := range cs {
		out[i] = c.p
	}
	return out
}

// EntryInfo describes one token for status output.
type EntryInfo struct {
	Token   address.Address
	Size    address.Offset
	Peer    mesh.PeerName
	Version uint32
	Free    address.Count
}

// Entries returns a description of every token.
func (r *Ring) AllEntries() []EntryInfo {
	out := make([]EntryInfo, len(r.Entries))
	for i, e := range r.Entries {
		out[i] = EntryInfo{Token: e.Token, Size: r.distance(i), Peer: e.Peer, Version: e.Version, Free: e.Free}
	}
	return out
}

func (r *Ring) String() string {
	s := fmt.Sprintf("ring %s peer %s seeds %v:", r.Range(), r.Peer, r.Seeds)
	for _, e := range r.Entries {
		s += fmt.Sprintf(" %s->%s(v%d,free %d)", e.Token, e.Peer, e.Version, e.Free)
	}
	return s
}
