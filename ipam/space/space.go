// Package space tracks the addresses one peer owns: which are free and which
// are allocated. Allocation always returns the lowest free address in the
// requested range; donation gives away an aligned block from the top of the
// free space so that the donor keeps its low, densely used addresses.
package space

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/seedf75a49c6/weave/ipam/address"
)

// Errors callers branch on.
var (
	ErrNotOwned     = errors.New("address not in our space")
	ErrInUse        = errors.New("address already allocated")
	ErrNotAllocated = errors.New("address not allocated")
)

// Space is not safe for concurrent use; the allocator actor owns it.
type Space struct {
	free      []address.Range // sorted, disjoint, coalesced
	allocated map[address.Address]struct{}
}

// New returns an empty space.
func New() *Space { return &Space{allocated: map[address.Address]struct{}{}} }

// Add makes r ours and free. Overlap with space we already own is an error.
func (s *Space) Add(r address.Range) error {
	if r.Size() == 0 {
		return nil
	}
	for _, f := range s.free {
		if f.Overlaps(r) {
			return fmt.Errorf("add space %s: overlaps free %s", r, f)
		}
	}
	for a := range s.allocated {
		if r.Contains(a) {
			return fmt.Errorf("add space %s: overlaps allocated %s", r, a)
		}
	}
	s.addFree(r)
	return nil
}

func (s *Space) addFree(r address.Range) {
	i, _ := slices.BinarySearchFunc(s.free, r.Start, func(f address.Range, a address.Address) int { return cmp.Compare(f.Start, a) })
	s.free = slices.Insert(s.free, i, r)
	if i+1 < len(s.free) && s.free[i].End == s.free[i+1].Start {
		s.free[i].End = s.free[i+1].End
		s.free = slices.Delete(s.free, i+1, i+2)
	}
	if i > 0 && s.free[i-1].End == s.free[i].Start {
		s.free[i-1].End = s.free[i].End
		s.free = slices.Delete(s.free, i, i+1)
	}
}

// removeFree takes r (which must be wholly free) out of the free list.
func (s *Space) removeFree(r address.Range) bool {
	for i, f := range s.free {
		if r.Start < f.Start || r.End > f.End {
			continue
		}
		var repl []address.Range
		if f.Start < r.Start {
			repl = append(repl, address.Range{Start: f.Start, End: r.Start})
		}
		if r.End < f.End {
			repl = append(repl, address.Range{Start: r.End, End: f.End})
		}
		s.free = slices.Replace(s.free, i, i+1, repl...)
		return true
	}
	return false
}

// Allocate takes the lowest free address in r.
func (s *Space) Allocate(r address.Range) (address.Address, bool) {
	for _, f := range s.free {
		x := f.Intersect(r)
		if x.Size() > 0 {
			s.removeFree(address.Range{Start: x.Start, End: x.Start + 1})
			s.allocated[x.Start] = struct{}{}
			return x.Start, true
		}
	}
	return 0, false
}

// Claim marks a specific free address as allocated.
func (s *Space) Claim(a address.Address) error {
	if _, ok := s.allocated[a]; ok {
		return fmt.Errorf("claim %s: %w", a, ErrInUse)
	}
	if !s.removeFree(address.Range{Start: a, End: a + 1}) {
		return fmt.Errorf("claim %s: %w", a, ErrNotOwned)
	}
	s.allocated[a] = struct{}{}
	return nil
}

// Free returns an allocated address to the free list.
func (s *Space) Free(a address.Address) error {
	if _, ok := s.allocated[a]; !ok {
		return fmt.Errorf("free %s: %w", a, ErrNotAllocated)
	}
	delete(s.allocated, a)
	s.addFree(address.Range{Start: a, End: a + 1})
	return nil
}

// IsAllocated reports whether a is allocated here.
func (s *Space) IsAllocated(a address.Address) bool {
	_, ok := s.allocated[a]
	return ok
}

// Owns reports whether a is ours (free or allocated).
func (s *Space) Owns(a address.Address) bool {
	if s.IsAllocated(a) {
		return true
	}
	for _, f := range s.free {
		if f.Contains(a) {
			return true
		}
	}
	return false
}

// NumFreeAddressesInRange counts free addresses inside r.
func (s *Space) NumFreeAddressesInRange(r address.Range) address.Count {
	var n address.Count
	for _, f := range s.free {
		n += address.Count(f.Intersect(r).Size())
	}
	return n
}

// NumAllocated returns how many addresses are allocated.
func (s *Space) NumAllocated() int { return len(s.allocated) }

// FreeRanges returns a copy of the free list.
func (s *Space) FreeRanges() []address.Range { return slices.Clone(s.free) }

// Allocated returns the allocated addresses, sorted.
func (s *Space) Allocated() []address.Address {
	out := make([]address.Address, 0, len(s.allocated))
	for a := range s.allocated {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// Donate gives away the largest CIDR-aligned free block inside r, but never
// more than half of the free space there (a single free address can go).
func (s *Space) Donate(r address.Range) (address.Range, bool) {
	total := s.NumFreeAddressesInRange(r)
	if total == 0 {
		return address.Range{}, false
	}
	limit := uint32(total) / 2
	if limit == 0 {
		limit = 1
	}
	limit = 1 << (31 - bits.LeadingZeros32(limit)) // round down to a power of two
	var best address.Range
	for _, f := range s.free {
		if b := topAlignedBlock(f.Intersect(r), limit); b.Size() > best.Size() ||
			(b.Size() == best.Size() && b.Size() > 0 && b.Start > best.Start) {
			best = b
		}
	}
	if best.Size() == 0 {
		return address.Range{}, false
	}
	s.removeFree(best)
	return best, true
}

// topAlignedBlock returns the highest aligned block of the largest size <= limit inside x.
func topAlignedBlock(x address.Range, limit uint32) address.Range {
	for size := limit; size > 0; size >>= 1 {
		if x.Size() < size {
			continue
		}
		start := uint64(x.End-address.Address(size)) &^ uint64(size-1)
		if start >= uint64(x.Start) {
			return address.NewRange(address.Address(start), size)
		}
	}
	return address.Range{}
}

// CheckInvariants verifies the free list is sorted, disjoint and coalesced
// and that no allocated address is also free.
func (s *Space) CheckInvariants() error {
	for i, f := range s.free {
		if f.Size() == 0 {
			return fmt.Errorf("check space: empty free range %s", f)
		}
		if i > 0 && s.free[i-1].End >= f.Start {
			return fmt.Errorf("check space: free ranges %s and %s overlap or touch", s.free[i-1], f)
		}
	}
	for a := range s.allocated {
		for _, f := range s.free {
			if f.Contains(a) {
				return fmt.Errorf("check space: %s both allocated and free", a)
			}
		}
	}
	return nil
}

// Remove drops the free addresses inside r from our space (the ring gave r
// to another peer) and returns how many were dropped. Allocated addresses
// stay allocated.
func (s *Space) Remove(r address.Range) address.Count {
	var n address.Count
	var keep []address.Range
	for _, f := range s.free {
		if !f.Overlaps(r) {
			keep = append(keep, f)
			continue
		}
		n += address.Count(f.Intersect(r).Size())
		if f.Start < r.Start {
			keep = append(keep, address.Range{Start: f.Start, End: r.Start})
		}
		if r.End < f.End {
			keep = append(keep, address.Range{Start: r.End, End: f.End})
		}
	}
	s.free = keep
	return n
}
