//go:build linux

package nft

import (
	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Registers: 1 is the 16-byte NFT_REG_1; concatenations use the 4-byte
// registers from NFT_REG32_00 (8) up.
const (
	reg1    = 1
	reg32_0 = 8
	reg32_1 = 9
	reg32_2 = 10
)

func ifIs(key expr.MetaKey, name string) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: key, Register: reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: ifname(name)},
	}
}

// ctEstablished matches ct state established,related.
func ctEstablished() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: reg1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
			Mask: nativeU32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED), Xor: nativeU32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: nativeU32(0)},
	}
}

func notIPv4() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: reg1},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: []byte{unix.NFPROTO_IPV4}},
	}
}

// setMark ORs mark into the packet mark.
func setMark(mark uint32) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: nativeU32(^mark), Xor: nativeU32(mark)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: reg1},
	}
}

// Offsets of the IPv4 source and destination address.
const (
	saddr = 12
	daddr = 16
)

// addrIn matches ip saddr/daddr @set; the nfproto check is what lets
// `nft list` print the match as "ip saddr" rather than raw payload.
func addrIn(offset uint32, set *nftables.Set) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{unix.NFPROTO_IPV4}},
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Lookup{SourceRegister: reg1, SetName: set.Name, SetID: set.ID},
	}
}

// l4protoDport loads meta l4proto . th dport into registers from first.
func l4protoDport(first uint32) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: first},
		&expr.Payload{DestRegister: first + 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
	}
}

// portIn matches meta l4proto . th dport @set.
func portIn(set *nftables.Set) []expr.Any {
	return append(l4protoDport(reg32_0), &expr.Lookup{SourceRegister: reg32_0, SetName: set.Name, SetID: set.ID})
}

// namedIn matches ip daddr . meta l4proto . th dport @set.
func namedIn(set *nftables.Set) []expr.Any {
	e := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{unix.NFPROTO_IPV4}},
		&expr.Payload{DestRegister: reg32_0, Base: expr.PayloadBaseNetworkHeader, Offset: daddr, Len: 4}}
	e = append(e, l4protoDport(reg32_1)...)
	return append(e, &expr.Lookup{SourceRegister: reg32_0, SetName: set.Name, SetID: set.ID})
}

func verdict(k expr.VerdictKind, chain string) expr.Any {
	return &expr.Verdict{Kind: k, Chain: chain}
}

func accept() expr.Any { return verdict(expr.VerdictAccept, "") }

// multicastDst matches ip daddr 224.0.0.0/4.
func multicastDst() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{unix.NFPROTO_IPV4}},
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: daddr, Len: 4},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: []byte{0xf0, 0, 0, 0}, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{0xe0, 0, 0, 0}},
	}
}
