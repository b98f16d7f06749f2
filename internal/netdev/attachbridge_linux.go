//go:build linux

package netdev

import (
	"fmt"

	"github.com/vishvananda/netlink"
)

// BridgeLinkPrefix and BridgeLinkPeerPrefix name the veth pair of `weave
// attach-bridge` (2.8.1's v<ethwe>bl<bridge> / v<ethwe>bg<bridge>): the
// first end is a port of the weave bridge, the second of the other one.
const (
	BridgeLinkPrefix     = "vethwebl"
	BridgeLinkPeerPrefix = "vethwebg"
)

// AttachBridge joins bridge other to the weave bridge with a veth pair
// (MTU of the weave bridge), both ends up; already joined is no error.
func AttachBridge(weave, other string) error {
	wb, err := netlink.LinkByName(weave)
	if err != nil {
		return fmt.Errorf("look up bridge %s: %w", weave, err)
	}
	ob, err := netlink.LinkByName(other)
	if err != nil {
		return fmt.Errorf("look up bridge %s: %w", other, err)
	}
	if ob.Type() != "bridge" {
		return fmt.Errorf("%s is a %s, not a bridge", other, ob.Type())
	}
	local, guest := trunc(BridgeLinkPrefix+other), trunc(BridgeLinkPeerPrefix+other)
	if _, err := netlink.LinkByName(local); isNotFound(err) {
		if err := createVeth(local, guest, wb.Attrs().MTU, nil); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		br   netlink.Link
	}{{local, wb}, {guest, ob}} {
		l, err := netlink.LinkByName(p.name)
		if err != nil {
			return fmt.Errorf("look up %s: %w", p.name, err)
		}
		if err := netlink.LinkSetMaster(l, p.br); err != nil {
			return fmt.Errorf("add %s to %s: %w", p.name, p.br.Attrs().Name, err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return fmt.Errorf("set %s up: %w", p.name, err)
		}
	}
	return nil
}

func trunc(name string) string {
	if len(name) > 15 {
		return name[:15]
	}
	return name
}
