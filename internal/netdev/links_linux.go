package netdev

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/seedf75a49c6/weave/internal/nlsafe"
	"github.com/vishvananda/netlink"
)

// DeleteLinks deletes every link of linkType ("vxlan", "veth", ...) whose
// name starts with prefix, in the calling thread's namespace: `weave reset`
// removes the fast path's VXLAN devices this way.
func DeleteLinks(linkType, prefix string) error {
	links, err := nlsafe.LinkList(nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range links {
		if l.Type() != linkType || !strings.HasPrefix(l.Attrs().Name, prefix) {
			continue
		}
		if err := netlink.LinkDel(l); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s device %s: %w", linkType, l.Attrs().Name, err))
		}
	}
	return errors.Join(errs...)
}

// BridgeAddrs returns the MAC and IPv4 addresses of bridge name; ok is
// false (and err nil) when there is no such link.
func BridgeAddrs(name string) (mac net.HardwareAddr, addrs []netip.Prefix, ok bool, err error) {
	l, err := netlink.LinkByName(name)
	if isNotFound(err) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("look up bridge %s: %w", name, err)
	}
	if addrs, err = linkPrefixes(l, netlink.FAMILY_V4); err != nil {
		return nil, nil, false, err
	}
	return l.Attrs().HardwareAddr, addrs, true, nil
}
