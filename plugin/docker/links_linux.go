//go:build linux

package docker

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/seedf75a49c6/weave/internal/netdev"
)

// NetdevLinks implements Links with internal/netdev, in the caller's
// network namespace (weaver's, where the bridge is). Firewall is the
// daemon's, so the monitor restores what the plugin exposes after an
// iptables flush; nil makes a short-lived one per call.
type NetdevLinks struct{ Firewall *netdev.Firewall }

// CreateEndpoint implements Links.
func (NetdevLinks) CreateEndpoint(bridge, id string, mac net.HardwareAddr) (net.HardwareAddr, error) {
	return netdev.CreateEndpoint(bridge, id, mac)
}

// DeleteEndpoint implements Links.
func (NetdevLinks) DeleteEndpoint(id string) (bool, error) { return netdev.DeleteEndpoint(id) }

// EndpointExists implements Links.
func (NetdevLinks) EndpointExists(id string) (bool, error) { return netdev.EndpointExists(id) }

// SandboxIfaces implements Links. For `docker run` the sandbox's
// namespace does not exist yet at Join (runc creates it later): nothing
// else is in it then.
func (NetdevLinks) SandboxIfaces(path string) (int, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	l, err := netdev.NamespaceIfaces(path, "")
	return len(l), err
}

// BridgeAddrs implements Links.
func (NetdevLinks) BridgeAddrs(bridge string) ([]netip.Prefix, error) {
	_, addrs, ok, err := netdev.BridgeAddrs(bridge)
	if err == nil && !ok {
		err = fmt.Errorf("look up bridge %s: no such interface (is weave running?)", bridge)
	}
	return addrs, err
}

// Expose implements Links.
func (l NetdevLinks) Expose(bridge string, addr netip.Prefix) error {
	if l.Firewall == nil {
		return netdev.NewFirewall(bridge, "").Expose(addr)
	}
	return l.Firewall.Expose(addr)
}
