//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Expose adds addr to the bridge (host access to the overlay) and the NAT
// rules that masquerade traffic from it. Idempotent.
func (f *Firewall) Expose(addr netip.Prefix) error { return f.expose(addr, false) }

// ExposeWithoutNAT is Expose without the NAT rules (POST
// /expose?skipNAT=true, weave expose --without-masquerade).
func (f *Firewall) ExposeWithoutNAT(addr netip.Prefix) error { return f.expose(addr, true) }

func (f *Firewall) expose(addr netip.Prefix, skipNAT bool) error {
	br, err := netlink.LinkByName(f.bridge)
	if err != nil {
		return fmt.Errorf("look up bridge %s: %w", f.bridge, err)
	}
	if _, err := addAddrs(br, []netip.Prefix{addr}); err != nil {
		return fmt.Errorf("expose %s: %w", addr, err)
	}
	f.mu.Lock()
	err = f.ensureExposeLocked(addr, skipNAT)
	f.mu.Unlock()
	if err != nil {
		return fmt.Errorf("expose %s: %w", addr, err)
	}
	return nil
}

// Hide removes an exposed address and its rules.
func (f *Firewall) Hide(addr netip.Prefix) error {
	bridge := f.bridge
	errs := []error{f.removeExpose(addr)}
	br, err := netlink.LinkByName(bridge)
	switch {
	case isNotFound(err):
	case err != nil:
		errs = append(errs, fmt.Errorf("look up bridge %s: %w", bridge, err))
	default:
		err := netlink.AddrDel(br, &netlink.Addr{IPNet: prefixToIPNet(addr)})
		if err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			errs = append(errs, fmt.Errorf("delete address %s from %s: %w", addr, bridge, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hide %s: %w", addr, err)
	}
	return nil
}
