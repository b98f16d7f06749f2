//go:build linux

package netdev

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// announceAddrs makes the kernel broadcast a gratuitous ARP request
// (sender IP = target IP, RFC 5227 announcement) for every IPv4 address of
// ifname, in the calling thread's namespace, so peers update stale ARP
// entries at once: arp_notify on, then a MAC "change" to the same MAC
// (NETDEV_CHANGEADDR, which arp_notify answers with the announcements).
// This replaces a frame sent on an AF_PACKET socket, whose close waits for
// an RCU grace period (10-20 ms on a loaded host, a third of a CNI ADD).
// Does nothing when addrs has no IPv4 address (IPv6 would need unsolicited
// neighbour advertisements).
func announceAddrs(ifname string, mac net.HardwareAddr, addrs []netip.Prefix) error {
	v4 := false
	for _, p := range addrs {
		v4 = v4 || p.Addr().Is4()
	}
	if !v4 || len(mac) != 6 {
		return nil
	}
	if err := setSysctl("net/ipv4/conf/"+ifname+"/arp_notify", "1"); err != nil {
		return err
	}
	link, err := netlink.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("look up %s: %w", ifname, err)
	}
	if err := netlink.LinkSetHardwareAddr(link, mac); err != nil {
		return fmt.Errorf("announce the addresses of %s (set MAC %s): %w", ifname, mac, err)
	}
	return nil
}
