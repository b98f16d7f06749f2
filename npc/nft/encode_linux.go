//go:build linux

package nft

import (
	"encoding/binary"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"

	"github.com/seedf75a49c6/weave/npc"
)

// Set key types. Concatenated keys pad every field to 4 bytes.
var (
	portKey     = nftables.MustConcatSetType(nftables.TypeInetProto, nftables.TypeInetService)
	addrPortKey = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService)
)

// protoPort is the 8-byte concatenated key protocol . port.
func protoPort(p npc.Proto, port uint16) []byte {
	b := make([]byte, 8)
	b[0] = byte(p)
	binary.BigEndian.PutUint16(b[4:], port)
	return b
}

func addr4(a netip.Addr) []byte {
	b := a.As4()
	return b[:]
}

// nextAddr returns a+1, and false at 255.255.255.255.
func nextAddr(a netip.Addr) (netip.Addr, bool) {
	n := a.Next()
	return n, n.IsValid()
}

// nftSet returns the kernel set for s and its elements.
func nftSet(t *nftables.Table, s *npc.Set) (*nftables.Set, []nftables.SetElement) {
	set := &nftables.Set{Table: t, Name: s.Name, Comment: truncate(s.Comment, 200)}
	var elems []nftables.SetElement
	switch s.Kind {
	case npc.AddrSet:
		set.KeyType, set.Interval = nftables.TypeIPAddr, true
		for _, r := range s.Addrs {
			elems = append(elems, nftables.SetElement{Key: addr4(r.First)})
			if end, ok := nextAddr(r.Last); ok {
				elems = append(elems, nftables.SetElement{Key: addr4(end), IntervalEnd: true})
			}
		}
	case npc.PortSet:
		set.KeyType, set.Interval, set.Concatenation = portKey, true, true
		for _, p := range s.Ports {
			elems = append(elems, nftables.SetElement{Key: protoPort(p.Proto, p.First), KeyEnd: protoPort(p.Proto, p.Last)})
		}
	case npc.AddrPortSet:
		set.KeyType, set.Concatenation = addrPortKey, true
		for _, ap := range s.AddrPorts {
			elems = append(elems, nftables.SetElement{Key: append(addr4(ap.Addr), protoPort(ap.Proto, ap.Port)...)})
		}
	}
	return set, elems
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}

// ifname is an interface name as nftables compares it: NUL padded to IFNAMSIZ.
func ifname(name string) []byte {
	b := make([]byte, 16)
	copy(b, name)
	return b
}

func nativeU32(v uint32) []byte { return binaryutil.NativeEndian.PutUint32(v) }
