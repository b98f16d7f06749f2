package router

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// errNotIPv4 is returned by FragNeeded for frames it cannot answer.
var errNotIPv4 = errors.New("not an IPv4 frame")

// FragNeeded builds the Ethernet frame of an ICMP "destination unreachable,
// fragmentation needed" (type 3 code 4) reply to frame, an untagged
// Ethernet frame carrying IPv4. The reply swaps MACs and IP addresses,
// carries mtu as next-hop MTU (ICMP bytes 6-7), TTL 64, and quotes the
// original IP header plus the first 8 bytes of its payload.
func FragNeeded(frame []byte, mtu int) ([]byte, error) {
	if len(frame) < ethHeaderLen+20 || binary.BigEndian.Uint16(frame[12:14]) != uint16(layers.EthernetTypeIPv4) {
		return nil, errNotIPv4
	}
	ip := frame[ethHeaderLen:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < 20 || ihl > len(ip) {
		return nil, errNotIPv4
	}
	quote := ip[:min(len(ip), ihl+8)]
	eth := &layers.Ethernet{
		SrcMAC:       append([]byte(nil), frame[0:6]...),
		DstMAC:       append([]byte(nil), frame[6:12]...),
		EthernetType: layers.EthernetTypeIPv4,
	}
	ipv4 := &layers.IPv4{
		Version:  4,
		IHL:      5,
		TTL:      64,
		Protocol: layers.IPProtocolICMPv4,
		SrcIP:    append([]byte(nil), ip[16:20]...),
		DstIP:    append([]byte(nil), ip[12:16]...),
	}
	icmp := &layers.ICMPv4{
		TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeDestinationUnreachable, layers.ICMPv4CodeFragmentationNeeded),
		Seq:      uint16(mtu), // bytes 6-7: next-hop MTU (bytes 4-5 unused, zero)
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ipv4, icmp, gopacket.Payload(quote)); err != nil {
		return nil, fmt.Errorf("serialize ICMP frag-needed for mtu %d: %w", mtu, err)
	}
	return buf.Bytes(), nil
}
