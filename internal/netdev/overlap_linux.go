package netdev

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/seedf75a49c6/weave/internal/nlsafe"
)

// HostOverlap returns a description of the first IPv4 route or address
// of this network namespace that overlaps p ("" when none does),
// ignoring the default route and anything on the interface except (the
// weave bridge, which carries the range itself).
func HostOverlap(p netip.Prefix, except string) (string, error) {
	links, err := nlsafe.LinkList(nil)
	if err != nil {
		return "", fmt.Errorf("list interfaces: %w", err)
	}
	names := map[int]string{}
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	routes, err := nlsafe.RouteList(nil, nil, netlink.FAMILY_V4)
	if err != nil {
		return "", fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		dst, ok := ipNetPrefix(r.Dst)
		if !ok || dst.Bits() == 0 || names[r.LinkIndex] == except {
			continue
		}
		if dst.Overlaps(p) {
			return fmt.Sprintf("route %s on %s", dst, orDev(names[r.LinkIndex])), nil
		}
	}
	for _, l := range links {
		if l.Attrs().Name == except {
			continue
		}
		addrs, err := nlsafe.AddrList(nil, l, netlink.FAMILY_V4)
		if err != nil {
			return "", fmt.Errorf("list addresses of %s: %w", l.Attrs().Name, err)
		}
		for _, a := range addrs {
			if ap, ok := ipNetPrefix(a.IPNet); ok && ap.Overlaps(p) {
				return fmt.Sprintf("address %s on %s", ap, l.Attrs().Name), nil
			}
		}
	}
	return "", nil
}

func ipNetPrefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil || n.IP.To4() == nil {
		return netip.Prefix{}, false
	}
	ip, _ := netip.AddrFromSlice(n.IP.To4())
	bits, _ := n.Mask.Size()
	return netip.PrefixFrom(ip, bits), true
}

func orDev(name string) string {
	if name == "" {
		return "an unknown interface"
	}
	return name
}
