//go:build linux

package kube

import (
	"fmt"
	"net/netip"

	"github.com/seedf75a49c6/weave/internal/netdev"
)

// CheckRangeFree fails when a route or address of this host (other than on
// the weave bridge) overlaps rng, as 2.8.1's launch refused such an
// IPALLOC_RANGE: pod addresses there would be unreachable or hijack the
// host's own network. It is the router's own check (netdev.HostOverlap).
func CheckRangeFree(rng netip.Prefix, bridge string) error {
	clash, err := netdev.HostOverlap(rng, bridge)
	if err != nil {
		return fmt.Errorf("check IPALLOC_RANGE against the host's routes: %w", err)
	}
	if clash != "" {
		return fmt.Errorf("IPALLOC_RANGE=%q overlaps this host's %s: choose a range no network of the nodes uses", rng, clash)
	}
	return nil
}
