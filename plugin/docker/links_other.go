//go:build !linux

package docker

import (
	"net"
	"net/netip"

	"github.com/seedf75a49c6/weave/internal/netdev"
)

// NetdevLinks is Linux only; elsewhere every call fails.
type NetdevLinks struct{}

// CreateEndpoint implements Links.
func (NetdevLinks) CreateEndpoint(string, string, net.HardwareAddr) (net.HardwareAddr, error) {
	return nil, netdev.ErrUnsupported
}

// DeleteEndpoint implements Links.
func (NetdevLinks) DeleteEndpoint(string) (bool, error) { return false, netdev.ErrUnsupported }

// EndpointExists implements Links.
func (NetdevLinks) EndpointExists(string) (bool, error) { return false, netdev.ErrUnsupported }

// SandboxIfaces implements Links.
func (NetdevLinks) SandboxIfaces(string) (int, error) { return 0, netdev.ErrUnsupported }

// BridgeAddrs implements Links.
func (NetdevLinks) BridgeAddrs(string) ([]netip.Prefix, error) { return nil, netdev.ErrUnsupported }

// Expose implements Links.
func (NetdevLinks) Expose(string, netip.Prefix) error { return netdev.ErrUnsupported }
