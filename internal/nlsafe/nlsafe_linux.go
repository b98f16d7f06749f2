//go:build linux

package nlsafe

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
)

// maxAttempts bounds the retries of one dump; a table that changes this
// often is reported as an error instead of spinning.
const maxAttempts = 30

// retry runs dump until it is not interrupted, at most maxAttempts times.
func retry[T any](what string, dump func() (T, error)) (T, error) {
	var v T
	var err error
	for range maxAttempts {
		if v, err = dump(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
	}
	return v, fmt.Errorf("%s: dump interrupted %d times in a row: %w", what, maxAttempts, err)
}

// h is the handle of the calling thread's namespace when nil.
func handle(h *netlink.Handle) *netlink.Handle {
	if h == nil {
		return &netlink.Handle{}
	}
	return h
}

// LinkList lists the links of h's namespace (nil: the thread's).
func LinkList(h *netlink.Handle) ([]netlink.Link, error) {
	return retry("list links", handle(h).LinkList)
}

// AddrList lists link's addresses of family (nil link: all links).
func AddrList(h *netlink.Handle, link netlink.Link, family int) ([]netlink.Addr, error) {
	return retry("list addresses", func() ([]netlink.Addr, error) { return handle(h).AddrList(link, family) })
}

// RouteList lists link's routes of family (nil link: all links).
func RouteList(h *netlink.Handle, link netlink.Link, family int) ([]netlink.Route, error) {
	return retry("list routes", func() ([]netlink.Route, error) { return handle(h).RouteList(link, family) })
}

// RouteListFiltered lists the routes of family that match filter on mask.
func RouteListFiltered(h *netlink.Handle, family int, filter *netlink.Route, mask uint64) ([]netlink.Route, error) {
	return retry("list routes", func() ([]netlink.Route, error) {
		return handle(h).RouteListFiltered(family, filter, mask)
	})
}

// NeighList lists the neighbour entries of the link with linkIndex (0: all).
func NeighList(h *netlink.Handle, linkIndex, family int) ([]netlink.Neigh, error) {
	return retry("list neighbours", func() ([]netlink.Neigh, error) { return handle(h).NeighList(linkIndex, family) })
}
