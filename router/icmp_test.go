package router

import (
	"bytes"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// onesSum is the Internet checksum fold; a valid header sums to 0xffff.
func onesSum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

func checkFragNeeded(t *testing.T, reply, orig []byte, mtu int) {
	t.Helper()
	pkt := gopacket.NewPacket(reply, layers.LayerTypeEthernet, gopacket.Default)
	eth, _ := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	icmp, _ := pkt.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if eth == nil || ip == nil || icmp == nil {
		t.Fatalf("reply does not decode as Ethernet/IPv4/ICMPv4: %v", pkt)
	}
	if !bytes.Equal(eth.SrcMAC, orig[0:6]) || !bytes.Equal(eth.DstMAC, orig[6:12]) {
		t.Errorf("MACs not swapped: %v -> %v", eth.SrcMAC, eth.DstMAC)
	}
	origIP := orig[14:]
	if !bytes.Equal(ip.SrcIP.To4(), origIP[16:20]) || !bytes.Equal(ip.DstIP.To4(), origIP[12:16]) {
		t.Errorf("IPs not swapped: %v -> %v", ip.SrcIP, ip.DstIP)
	}
	if ip.TTL != 64 || ip.Protocol != layers.IPProtocolICMPv4 {
		t.Errorf("TTL %d protocol %v", ip.TTL, ip.Protocol)
	}
	if icmp.TypeCode.Type() != 3 || icmp.TypeCode.Code() != 4 {
		t.Errorf("type/code = %v", icmp.TypeCode)
	}
	icmpBytes := reply[14+20:]
	if got := int(icmpBytes[6])<<8 | int(icmpBytes[7]); got != mtu || icmpBytes[4] != 0 || icmpBytes[5] != 0 {
		t.Errorf("ICMP bytes 4-7 = % x, want 00 00 + MTU %d", icmpBytes[4:8], mtu)
	}
	ihl := int(origIP[0]&0x0f) * 4
	if !bytes.Equal(icmp.Payload, origIP[:ihl+8]) {
		t.Errorf("quoted payload = % x, want first %d bytes of original", icmp.Payload, ihl+8)
	}
	if onesSum(reply[14:34]) != 0xffff {
		t.Error("bad IPv4 header checksum")
	}
	if onesSum(icmpBytes) != 0xffff {
		t.Error("bad ICMP checksum")
	}
	if int(ip.Length) != len(reply)-14 {
		t.Errorf("IP length %d, frame carries %d", ip.Length, len(reply)-14)
	}
}

func TestFragNeededBytes(t *testing.T) {
	orig := ipv4Frame(macRemote, macLocal, true, 3000)
	reply, err := FragNeeded(orig, 1414)
	if err != nil {
		t.Fatal(err)
	}
	checkFragNeeded(t, reply, orig, 1414)
}

func TestFragNeededRejectsNonIPv4(t *testing.T) {
	if _, err := FragNeeded(ethFrame(macRemote, macLocal, 0x0806, make([]byte, 40)), 1400); err == nil {
		t.Fatal("ARP frame accepted")
	}
	short := ipv4Frame(macRemote, macLocal, true, 0)[:20]
	if _, err := FragNeeded(short, 1400); err == nil {
		t.Fatal("truncated frame accepted")
	}
	bad := ipv4Frame(macRemote, macLocal, true, 10)
	bad[14] = 0x4f // IHL 60 > packet
	if _, err := FragNeeded(bad, 1400); err == nil {
		t.Fatal("bad IHL accepted")
	}
}
