//go:build linux

package kube

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/seedf75a49c6/weave/internal/nlsafe"
)

// CheckRangeFree fails when a route of this host (other than through the
// weave bridge) overlaps rng, as 2.8.1's launch refused such an
// IPALLOC_RANGE: pod addresses there would be unreachable or hijack the
// host's own network.
func CheckRangeFree(rng netip.Prefix, bridge string) error {
	routes, err := nlsafe.RouteList(nil, nil, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("list routes to check IPALLOC_RANGE: %w", err)
	}
	for _, r := range routes {
		if r.Dst == nil {
			continue // the default route overlaps everything by design
		}
		dst, ok := netip.AddrFromSlice(r.Dst.IP)
		ones, _ := r.Dst.Mask.Size()
		if !ok || !netip.PrefixFrom(dst.Unmap(), ones).Overlaps(rng) {
			continue
		}
		name := fmt.Sprintf("index %d", r.LinkIndex)
		if l, err := netlink.LinkByIndex(r.LinkIndex); err == nil {
			name = l.Attrs().Name
		}
		if name == bridge {
			continue
		}
		return fmt.Errorf("IPALLOC_RANGE=%q overlaps this host's route %s dev %s: choose a range no network of the nodes uses", rng, r.Dst, name)
	}
	return nil
}
