package fastdp

import (
	"net"

	"github.com/vishvananda/netlink"
)

// UnderlayMTU returns the MTU and name of the underlay interface: the one
// holding host (the mesh --host address) when set, else the one of the
// route to a public address (the default route). It returns 1500 and ""
// when neither is found.
func UnderlayMTU(host string) (int, string) {
	if ip := net.ParseIP(host); ip != nil {
		if ifi := interfaceWithAddr(ip); ifi != nil {
			return ifi.MTU, ifi.Name
		}
	}
	routes, err := netlink.RouteGet(net.IPv4(192, 0, 2, 1))
	if err == nil && len(routes) > 0 {
		if l, err := netlink.LinkByIndex(routes[0].LinkIndex); err == nil {
			return l.Attrs().MTU, l.Attrs().Name
		}
	}
	return 1500, ""
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
