//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/nlsafe"
)

// CreateEndpoint creates the veth pair of a Docker endpoint with the
// bridge's MTU, enslaves the host end (hairpin on, IPv6 off, up) and leaves
// the container end in this namespace for Docker to move. mac, when set,
// is the container end's MAC. A pair left from an earlier attempt is
// replaced. It returns the container end's MAC.
func CreateEndpoint(bridge, endpointID string, mac net.HardwareAddr) (net.HardwareAddr, error) {
	if bridge == "" {
		bridge = DefaultBridge
	}
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		return nil, fmt.Errorf("look up bridge %s: %w", bridge, err)
	}
	host, guest := EndpointNames(endpointID)
	for _, stale := range []string{host, guest} {
		if err := deleteLink(stale); err != nil {
			return nil, err
		}
	}
	if err := createVeth(host, guest, br.Attrs().MTU, mac); err != nil {
		return nil, err
	}
	if err := attachHostEnd(host, br, true); err != nil {
		_ = deleteLink(host)
		return nil, err
	}
	g, err := netlink.LinkByName(guest)
	if err != nil {
		_ = deleteLink(host)
		return nil, fmt.Errorf("look up %s: %w", guest, err)
	}
	return g.Attrs().HardwareAddr, nil
}

// DeleteEndpoint deletes the endpoint's veth pair (wherever its container
// end is now); existed reports whether the host end was there.
func DeleteEndpoint(endpointID string) (existed bool, err error) {
	host, guest := EndpointNames(endpointID)
	existed, err = EndpointExists(endpointID)
	if err != nil {
		return false, err
	}
	return existed, errors.Join(deleteLink(host), deleteLink(guest))
}

// EndpointExists reports whether the endpoint's host-side veth exists.
func EndpointExists(endpointID string) (bool, error) {
	host, _ := EndpointNames(endpointID)
	_, err := netlink.LinkByName(host)
	switch {
	case isNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("look up %s: %w", host, err)
	}
	return true, nil
}

// NamespaceIfaces lists the interfaces in the namespace at netnsPath whose
// names start with prefix ("" = all but loopback), in index order.
func NamespaceIfaces(netnsPath, prefix string) ([]Iface, error) {
	var out []Iface
	err := netns.Do(netnsPath, func() error {
		links, err := nlsafe.LinkList(nil)
		if err != nil {
			return fmt.Errorf("list links: %w", err)
		}
		for _, l := range links {
			a := l.Attrs()
			if a.Flags&net.FlagLoopback != 0 || !strings.HasPrefix(a.Name, prefix) {
				continue
			}
			addrs, err := linkPrefixes(l, netlink.FAMILY_V4)
			if err != nil {
				return err
			}
			out = append(out, Iface{Name: a.Name, MAC: a.HardwareAddr, Addrs: addrs})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list interfaces in %s: %w", netnsPath, err)
	}
	return out, nil
}
