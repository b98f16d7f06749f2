//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// brStateForwarding is BR_STATE_FORWARDING from <linux/if_bridge.h>.
const brStateForwarding = 3

// bridgePortState returns the STP state (IFLA_BRPORT_STATE) of the bridge
// port with ifindex, in the calling thread's namespace.
func bridgePortState(ifindex int) (uint8, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_DUMP)
	req.AddData(nl.NewIfInfomsg(unix.AF_BRIDGE))
	msgs, err := req.Execute(unix.NETLINK_ROUTE, 0)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return 0, fmt.Errorf("dump bridge ports: %w", err)
	}
	for _, m := range msgs {
		info := nl.DeserializeIfInfomsg(m)
		if int(info.Index) != ifindex {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[info.Len():])
		if err != nil {
			return 0, fmt.Errorf("parse bridge port %d: %w", ifindex, err)
		}
		for _, a := range attrs {
			if a.Attr.Type&^unix.NLA_F_NESTED != unix.IFLA_PROTINFO {
				continue
			}
			nested, err := nl.ParseRouteAttr(a.Value)
			if err != nil {
				return 0, fmt.Errorf("parse bridge port %d info: %w", ifindex, err)
			}
			for _, n := range nested {
				if n.Attr.Type == nl.IFLA_BRPORT_STATE && len(n.Value) > 0 {
					return n.Value[0], nil
				}
			}
		}
	}
	return 0, fmt.Errorf("bridge port %d not found", ifindex)
}

// awaitForwarding polls (netlink has no cheap wait for this) until the
// bridge port with ifindex forwards, or max passes. A port is enabled
// asynchronously once its veth peer is up; frames sent before then are lost.
func awaitForwarding(ifindex int, max time.Duration) bool {
	deadline := time.Now().Add(max)
	for {
		if st, err := bridgePortState(ifindex); err == nil && st == brStateForwarding {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}
