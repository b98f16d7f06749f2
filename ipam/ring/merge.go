package ring

import (
	"fmt"
	"slices"

	"github.com/seedf75a49c6/weave/ipam/address"
)

// Merge folds another replica into r. The whole update is rejected (and r
// left untouched) when it is invalid, seeded by other peers, over another
// universe, would take away space we hold allocations in, or leaves
// another peer's token claiming more free addresses than it owns (as Weave
// 2.8.1 refuses it). It reports whether r changed.
func (r *Ring) Merge(other *Ring) (bool, error) {
	if other == nil {
		return false, nil
	}
	if other.Start != r.Start || other.End != r.End {
		return false, fmt.Errorf("merge ring %s into %s: %w", other.Range(), r.Range(), ErrDifferentRange)
	}
	if len(r.Seeds) > 0 && len(other.Seeds) > 0 && !slices.Equal(r.Seeds, other.Seeds) {
		return false, fmt.Errorf("merge ring seeded by %v into ring seeded by %v: %w", other.Seeds, r.Seeds, ErrDifferentSeeds)
	}
	if err := other.CheckInvariants(); err != nil {
		return false, fmt.Errorf("merge ring from %s: %w", other.Peer, err)
	}
	merged, err := r.mergeEntries(other)
	if err != nil {
		return false, err
	}
	result := &Ring{Start: r.Start, End: r.End, Peer: r.Peer, Entries: merged, Seeds: r.Seeds}
	if len(result.Seeds) == 0 {
		result.Seeds = slices.Clone(other.Seeds)
	}
	result.clampOwnFree()
	if err := result.CheckInvariants(); err != nil {
		return false, fmt.Errorf("merge of ring from %s causes: %w", other.Peer, err)
	}
	changed := !r.equalEntries(result) || !slices.Equal(r.Seeds, result.Seeds)
	r.Entries, r.Seeds = result.Entries, result.Seeds
	return changed, nil
}

// usedByUs reports whether we own entry i and have allocations in it.
func (r *Ring) usedByUs(i int) bool {
	e := r.Entries[i]
	return e.Peer == r.Peer && address.Offset(e.Free) < r.distance(i)
}

func (r *Ring) mergeEntries(other *Ring) (entries, error) {
	var out entries
	i, j := 0, 0
	for i < len(r.Entries) || j < len(other.Entries) {
		switch {
		case j >= len(other.Entries) || (i < len(r.Entries) && r.Entries[i].Token < other.Entries[j].Token):
			out = append(out, copyEntry(r.Entries[i]))
			i++
		case i >= len(r.Entries) || other.Entries[j].Token < r.Entries[i].Token:
			theirs := other.Entries[j]
			if k := r.owningIndex(theirs.Token); k >= 0 && r.usedByUs(k) && !r.yield {
				return nil, fmt.Errorf("merge token %s from %s: %w", theirs.Token, other.Peer, ErrEntryInMyRange)
			}
			out = append(out, copyEntry(theirs))
			j++
		default:
			e, err := r.mergeToken(i, other.Entries[j], other)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
			i++
			j++
		}
	}
	return out, nil
}

func (r *Ring) mergeToken(i int, theirs *entry, other *Ring) (*entry, error) {
	mine := r.Entries[i]
	if mine.Peer == r.Peer && r.tentative[mine.Token] && theirs.Peer != r.Peer &&
		(theirs.Version > mine.Version || (theirs.Version == mine.Version && theirs.Peer > mine.Peer)) {
		return copyEntry(theirs), nil // a competing takeover wins; ours was never used
	}
	switch {
	case theirs.Version > mine.Version:
		if mine.Peer != r.Peer {
			return copyEntry(theirs), nil
		}
		if theirs.Peer == r.Peer { // an old incarnation of ours: reassert
			e := copyEntry(mine)
			e.Version = theirs.Version + 1
			return e, nil
		}
		if !r.usedByUs(i) || r.yield { // given away while we held nothing there, or taken over
			return copyEntry(theirs), nil
		}
		return nil, fmt.Errorf("merge token %s from %s (v%d > v%d): %w", mine.Token, other.Peer, theirs.Version, mine.Version, ErrNewerVersion)
	case theirs.Version < mine.Version || *theirs == *mine:
		return copyEntry(mine), nil
	}
	// Same version, different content.
	if r.usedByUs(i) {
		return nil, fmt.Errorf("merge token %s from %s: conflicting content at v%d: %w", mine.Token, other.Peer, mine.Version, ErrNewerVersion)
	}
	if theirs.Free > mine.Free || (theirs.Free == mine.Free && theirs.Peer > mine.Peer) {
		return copyEntry(theirs), nil
	}
	return copyEntry(mine), nil
}

func copyEntry(e *entry) *entry {
	c := *e
	return &c
}

func (r *Ring) equalEntries(o *Ring) bool {
	return slices.EqualFunc(r.Entries, o.Entries, func(a, b *entry) bool { return *a == *b })
}
