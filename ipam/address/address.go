// Package address holds the IPv4 value types IPAM works with: addresses,
// half-open ranges and CIDR blocks.
//
// Addresses are uint32 so that gob encodes them as unsigned integers exactly
// as Weave Net 2.8.1 does on the IPallocation channel; parsing and printing
// go through net/netip.
package address

import (
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
)

// Address is an IPv4 address as a big-endian uint32.
type Address uint32

// Offset is a distance between two addresses.
type Offset = uint32

// Count is a number of addresses.
type Count uint32

// ErrNotIPv4 is returned when an IPv6 (or invalid) address is given.
var ErrNotIPv4 = errors.New("not an IPv4 address")

// FromNetIP converts a netip.Addr (IPv4 or IPv4-mapped IPv6) to an Address.
func FromNetIP(ip netip.Addr) (Address, error) {
	ip = ip.Unmap()
	if !ip.Is4() {
		return 0, fmt.Errorf("convert %s: %w", ip, ErrNotIPv4)
	}
	b := ip.As4()
	return Address(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])), nil
}

// ParseIP parses dotted-quad text.
func ParseIP(s string) (Address, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return 0, fmt.Errorf("parse address %q: %w", s, err)
	}
	return FromNetIP(ip)
}

// NetIP returns the address as a netip.Addr.
func (a Address) NetIP() netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
}

func (a Address) String() string { return a.NetIP().String() }

// Add returns a+n (wrapping at 2^32).
func Add(a Address, n Offset) Address { return a + Address(n) }

// Subtract returns a-b as an offset.
func Subtract(a, b Address) Offset { return Offset(a - b) }

// Min returns the smaller address.
func Min(a, b Address) Address {
	if a < b {
		return a
	}
	return b
}

// Max returns the larger address.
func Max(a, b Address) Address {
	if a > b {
		return a
	}
	return b
}

// Range is the half-open interval [Start, End). The gob field names match
// Weave's address.Range (used in space requests).
type Range struct {
	Start, End Address
}

// NewRange returns [start, start+size).
func NewRange(start Address, size Offset) Range { return Range{Start: start, End: Add(start, size)} }

// Size is the number of addresses in r.
func (r Range) Size() Offset { return Subtract(r.End, r.Start) }

// Contains reports whether a is in r.
func (r Range) Contains(a Address) bool { return a >= r.Start && a < r.End }

// Overlaps reports whether r and o share an address.
func (r Range) Overlaps(o Range) bool { return r.Start < o.End && o.Start < r.End }

// Intersect returns the common part of r and o (empty when they do not overlap).
func (r Range) Intersect(o Range) Range {
	s, e := Max(r.Start, o.Start), Min(r.End, o.End)
	if s >= e {
		return Range{Start: s, End: s}
	}
	return Range{Start: s, End: e}
}

func (r Range) String() string { return fmt.Sprintf("%s-%s", r.Start, r.End) }

// CIDRs splits r into the minimal list of aligned CIDR blocks.
func (r Range) CIDRs() []CIDR {
	var out []CIDR
	for s := uint64(r.Start); s < uint64(r.End); {
		size := uint64(1) << bits.TrailingZeros32(uint32(s))
		if s == 0 {
			size = 1 << 32
		}
		for s+size > uint64(r.End) {
			size >>= 1
		}
		out = append(out, CIDR{Addr: Address(s), PrefixLen: 32 - bits.TrailingZeros64(size)})
		s += size
	}
	return out
}

// CIDR is an address with a prefix length. Field names match Weave's
// address.CIDR (persisted in the owned-addresses record).
type CIDR struct {
	Addr      Address
	PrefixLen int
}

// ParseCIDR parses "a.b.c.d/n". The address part may be a host address
// inside the block (as in "10.32.0.1/12").
func ParseCIDR(s string) (CIDR, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return CIDR{}, fmt.Errorf("parse CIDR %q: %w", s, err)
	}
	a, err := FromNetIP(p.Addr())
	if err != nil {
		return CIDR{}, fmt.Errorf("parse CIDR %q: %w", s, err)
	}
	if p.Addr().Is4In6() {
		return CIDR{}, fmt.Errorf("parse CIDR %q: %w", s, ErrNotIPv4)
	}
	return CIDR{Addr: a, PrefixLen: p.Bits()}, nil
}

// MustParseCIDR is ParseCIDR for constants in tests and defaults.
func MustParseCIDR(s string) CIDR {
	c, err := ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return c
}

// Size is the number of addresses in the block (2^32 is reported as 0).
func (c CIDR) Size() Offset { return Offset(uint64(1) << (32 - c.PrefixLen)) }

func (c CIDR) mask() Address {
	if c.PrefixLen == 0 {
		return 0
	}
	return Address(^uint32(0) << (32 - c.PrefixLen))
}

// Start is the network address.
func (c CIDR) Start() Address { return c.Addr & c.mask() }

// Range is the whole block, network and broadcast addresses included.
func (c CIDR) Range() Range { return NewRange(c.Start(), c.Size()) }

// HostRange excludes the network and broadcast addresses (RFC 1122) for
// blocks of 4 or more addresses.
func (c CIDR) HostRange() Range {
	r := c.Range()
	if c.PrefixLen < 31 {
		r.Start++
		r.End--
	}
	return r
}

// IsSubnet reports whether Addr is the network address of the block.
func (c CIDR) IsSubnet() bool { return c.Addr == c.Start() }

// Network returns the block with Addr cleared to the network address.
func (c CIDR) Network() CIDR { return CIDR{Addr: c.Start(), PrefixLen: c.PrefixLen} }

// Prefix returns the block as a netip.Prefix.
func (c CIDR) Prefix() netip.Prefix { return netip.PrefixFrom(c.Addr.NetIP(), c.PrefixLen) }

func (c CIDR) String() string { return fmt.Sprintf("%s/%d", c.Addr, c.PrefixLen) }
