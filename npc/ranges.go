package npc

import (
	"cmp"
	"encoding/binary"
	"maps"
	"net/netip"
	"slices"
)

// span is an inclusive IPv4 range as integers, for arithmetic.
type span struct{ lo, hi uint32 }

func v4(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func addrOf(u uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], u)
	return netip.AddrFrom4(b)
}

// prefixSpan is the address range of an IPv4 prefix.
func prefixSpan(p netip.Prefix) span {
	p = p.Masked()
	lo := v4(p.Addr())
	size := uint64(1) << (32 - p.Bits())
	return span{lo, uint32(uint64(lo) + size - 1)}
}

// subtract removes cut from every span in list.
func subtract(list []span, cut span) []span {
	var out []span
	for _, s := range list {
		if cut.hi < s.lo || cut.lo > s.hi {
			out = append(out, s)
			continue
		}
		if cut.lo > s.lo {
			out = append(out, span{s.lo, cut.lo - 1})
		}
		if cut.hi < s.hi {
			out = append(out, span{cut.hi + 1, s.hi})
		}
	}
	return out
}

// merge sorts spans and joins overlapping or adjacent ones.
func merge(list []span) []span {
	slices.SortFunc(list, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	var out []span
	for _, s := range list {
		if n := len(out); n > 0 && uint64(s.lo) <= uint64(out[n-1].hi)+1 {
			out[n-1].hi = max(out[n-1].hi, s.hi)
			continue
		}
		out = append(out, s)
	}
	return out
}

func toRanges(list []span) []AddrRange {
	out := make([]AddrRange, 0, len(list))
	for _, s := range merge(list) {
		out = append(out, AddrRange{addrOf(s.lo), addrOf(s.hi)})
	}
	return out
}

// mergePorts sorts port ranges and joins overlapping or adjacent ones of
// the same protocol.
func mergePorts(list []PortRange) []PortRange {
	slices.SortFunc(list, func(a, b PortRange) int {
		return cmp.Or(cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.First, b.First))
	})
	var out []PortRange
	for _, p := range list {
		if n := len(out); n > 0 && out[n-1].Proto == p.Proto && uint32(p.First) <= uint32(out[n-1].Last)+1 {
			out[n-1].Last = max(out[n-1].Last, p.Last)
			continue
		}
		out = append(out, p)
	}
	return out
}

func sortAddrPorts(list []AddrPort) []AddrPort {
	slices.SortFunc(list, func(a, b AddrPort) int {
		return cmp.Or(a.Addr.Compare(b.Addr), cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.Port, b.Port))
	})
	return slices.Compact(list)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// containsAddr reports whether a falls in one of the sorted ranges.
func containsAddr(list []AddrRange, a netip.Addr) bool {
	u := v4(a)
	for _, r := range list {
		if u >= v4(r.First) && u <= v4(r.Last) {
			return true
		}
	}
	return false
}
