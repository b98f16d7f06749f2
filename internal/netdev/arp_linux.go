//go:build linux

package netdev

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// sendGratuitousARP broadcasts an ARP request announcing ip at mac from the
// interface with ifindex, so peers update stale ARP entries at once. It uses
// an AF_PACKET socket in the calling thread's namespace. IPv6 addresses are
// skipped (they would need unsolicited neighbour advertisements).
func sendGratuitousARP(ifindex int, mac net.HardwareAddr, ip netip.Addr) error {
	if !ip.Is4() || len(mac) != 6 {
		return nil
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open packet socket for gratuitous ARP: %w", err)
	}
	defer unix.Close(fd)
	bcast := [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: ifindex, Halen: 6, Addr: bcast}
	if err := unix.Sendto(fd, arpFrame(mac, ip), 0, sa); err != nil {
		return fmt.Errorf("send gratuitous ARP for %s: %w", ip, err)
	}
	return nil
}

// arpFrame builds a broadcast Ethernet frame carrying an ARP request whose
// sender and target protocol addresses are both ip (RFC 5227 announcement).
func arpFrame(mac net.HardwareAddr, ip netip.Addr) []byte {
	f := make([]byte, 42)
	copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:12], mac)
	binary.BigEndian.PutUint16(f[12:14], unix.ETH_P_ARP)
	a := f[14:]
	binary.BigEndian.PutUint16(a[0:2], 1)             // hardware type Ethernet
	binary.BigEndian.PutUint16(a[2:4], unix.ETH_P_IP) // protocol IPv4
	a[4], a[5] = 6, 4                                 // address lengths
	binary.BigEndian.PutUint16(a[6:8], 1)             // op: request
	copy(a[8:14], mac)                                // sender MAC
	ip4 := ip.As4()
	copy(a[14:18], ip4[:]) // sender IP
	copy(a[24:28], ip4[:]) // target IP (target MAC zero)
	return f
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
