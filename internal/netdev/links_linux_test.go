package netdev

import (
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestDeleteLinksByTypeAndPrefix(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	in(t, nsPath, func() error {
		for i, name := range []string{"vxt-1", "vxt-2", "other-3"} {
			vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: name}, VxlanId: 100 + i, Port: 4789 + i}
			if err := netlink.LinkAdd(vx); err != nil {
				return err
			}
		}
		return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "vxt-veth"}, PeerName: "vxt-peer"})
	})
	in(t, nsPath, func() error { return DeleteLinks("vxlan", "vxt-") })
	names := linkNames(t, nsPath)
	for _, gone := range []string{"vxt-1", "vxt-2"} {
		if slices.Contains(names, gone) {
			t.Errorf("%s survived DeleteLinks: %v", gone, names)
		}
	}
	for _, kept := range []string{"other-3", "vxt-veth", bridge} {
		if !slices.Contains(names, kept) {
			t.Errorf("%s was deleted but is not a vxt- vxlan: %v", kept, names)
		}
	}
}

func TestBridgeAddrs(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	want := netip.MustParsePrefix("10.32.0.1/12")
	in(t, nsPath, func() error {
		l, err := netlink.LinkByName(bridge)
		if err != nil {
			return err
		}
		return netlink.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: want.Addr().AsSlice(), Mask: net.CIDRMask(12, 32)}})
	})
	in(t, nsPath, func() error {
		mac, addrs, ok, err := BridgeAddrs(bridge)
		if err != nil || !ok || len(mac) != 6 || !slices.Equal(addrs, []netip.Prefix{want}) {
			t.Errorf("BridgeAddrs(%s) = %v %v %v %v; want a MAC, [%v], true, nil", bridge, mac, addrs, ok, err, want)
		}
		if _, _, ok, err := BridgeAddrs("nosuchbr0"); ok || err != nil {
			t.Errorf("missing bridge: ok=%v err=%v; want false, nil", ok, err)
		}
		return nil
	})
}
