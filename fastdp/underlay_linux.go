package fastdp

import (
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// Documentation addresses (RFC 5737, RFC 3849) stand for "the rest of
// the world" in route lookups: the route to them is the default route.
var (
	publicIPv4 = net.IPv4(192, 0, 2, 1)
	publicIPv6 = net.ParseIP("2001:db8::1")
)

// DetectUnderlay finds the underlay interface and family:
//
//   - host (the mesh --host address) set: its family, and the interface
//     holding it (else the one of that family's default route);
//   - else the interface of the IPv4 default route, IPv4 (as before IPv6
//     underlays: a dual-stack host counts as IPv4, see docs/ipv6.md);
//   - else, on a host without any IPv4 address (loopback and link-local
//     aside) but with a global IPv6 one: IPv6, on the interface of the
//     IPv6 default route or the one holding that address;
//   - else IPv4 over an assumed 1500.
func DetectUnderlay(host string) Underlay {
	if ip, err := netip.ParseAddr(host); err == nil && !(ip.Is6() && ip.IsUnspecified()) {
		v6 := ip.Unmap().Is6()
		if ifi := interfaceWithAddr(net.IP(ip.AsSlice())); ifi != nil {
			return Underlay{MTU: ifi.MTU, Iface: ifi.Name, IPv6: v6}
		}
		dst := publicIPv4
		if v6 {
			dst = publicIPv6
		}
		u := routeUnderlay(dst)
		u.IPv6 = v6
		return u
	}
	if u := routeUnderlay(publicIPv4); u.Iface != "" {
		return u
	}
	if ifi := ipv6OnlyInterface(); ifi != nil {
		if u := routeUnderlay(publicIPv6); u.Iface != "" {
			u.IPv6 = true
			return u
		}
		return Underlay{MTU: ifi.MTU, Iface: ifi.Name, IPv6: true}
	}
	return Underlay{MTU: 1500}
}

// routeUnderlay is the interface of the route to dst, or MTU 1500 and no
// name when there is none.
func routeUnderlay(dst net.IP) Underlay {
	routes, err := netlink.RouteGet(dst)
	if err == nil && len(routes) > 0 {
		if l, err := netlink.LinkByIndex(routes[0].LinkIndex); err == nil {
			return Underlay{MTU: l.Attrs().MTU, Iface: l.Attrs().Name}
		}
	}
	return Underlay{MTU: 1500}
}

// ipv6OnlyInterface returns the first interface with a global IPv6
// address when no interface has an IPv4 address other than loopback and
// link-local ones; else nil.
func ipv6OnlyInterface() *net.Interface {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var first *net.Interface
	for i := range ifs {
		addrs, err := ifs[i].Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() {
				continue
			}
			if n.IP.To4() != nil {
				return nil
			}
			if first == nil && n.IP.IsGlobalUnicast() {
				first = &ifs[i]
			}
		}
	}
	return first
}

func interfaceWithAddr(ip net.IP) *net.Interface {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	for i := range ifs {
		addrs, err := ifs[i].Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return &ifs[i]
			}
		}
	}
	return nil
}
