//go:build !linux

package netdev

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"time"
)

// EnsureBridge returns ErrUnsupported outside Linux.
func EnsureBridge(cfg BridgeConfig) error { return ErrUnsupported }

// DestroyBridge returns ErrUnsupported outside Linux.
func DestroyBridge(name string) error { return ErrUnsupported }

// Firewall is unsupported outside Linux.
type Firewall struct{}

// NewFirewall returns a Firewall whose methods fail with ErrUnsupported.
func NewFirewall(bridge, bin string) *Firewall { return &Firewall{} }

// Ensure returns ErrUnsupported outside Linux.
func (*Firewall) Ensure() error { return ErrUnsupported }

// Remove returns ErrUnsupported outside Linux.
func (*Firewall) Remove() error { return ErrUnsupported }

// Expose returns ErrUnsupported outside Linux.
func (*Firewall) Expose(addr netip.Prefix) error { return ErrUnsupported }

// ExposeWithoutNAT is not supported off Linux.
func (*Firewall) ExposeWithoutNAT(addr netip.Prefix) error { return ErrUnsupported }

// Hide returns ErrUnsupported outside Linux.
func (*Firewall) Hide(addr netip.Prefix) error { return ErrUnsupported }

// Monitor logs that it is unsupported and returns at once.
func (*Firewall) Monitor(ctx context.Context, interval time.Duration, log *slog.Logger) {
	log.Warn("iptables monitor not started", "err", ErrUnsupported)
}

// AttachContainer returns ErrUnsupported outside Linux.
func AttachContainer(cfg AttachConfig) (net.HardwareAddr, error) { return nil, ErrUnsupported }

// DetachContainer returns ErrUnsupported outside Linux.
func DetachContainer(netnsPath, ifName string, addrs []netip.Prefix) error { return ErrUnsupported }

// ContainerAddrs returns ErrUnsupported outside Linux.
func ContainerAddrs(netnsPath, ifName string) (mac net.HardwareAddr, addrs []netip.Prefix, ok bool, err error) {
	return nil, nil, false, ErrUnsupported
}

// DeleteLink returns ErrUnsupported outside Linux.
func DeleteLink(name string) error { return ErrUnsupported }

// CreateEndpoint is Linux only.
func CreateEndpoint(bridge, endpointID string, mac net.HardwareAddr) (net.HardwareAddr, error) {
	return nil, ErrUnsupported
}

// DeleteEndpoint is Linux only.
func DeleteEndpoint(endpointID string) (bool, error) { return false, ErrUnsupported }

// EndpointExists is Linux only.
func EndpointExists(endpointID string) (bool, error) { return false, ErrUnsupported }

// NamespaceIfaces is Linux only.
func NamespaceIfaces(netnsPath, prefix string) ([]Iface, error) { return nil, ErrUnsupported }

// HostOverlap returns ErrUnsupported outside Linux.
func HostOverlap(p netip.Prefix, except string) (string, error) { return "", ErrUnsupported }

// AdoptWeave281Host returns ErrUnsupported outside Linux.
func (*Firewall) AdoptWeave281Host() ([]string, error) { return nil, ErrUnsupported }

// Weave281DatapathPresent is false outside Linux.
func Weave281DatapathPresent() bool { return false }

// AttachBridge is unsupported outside Linux.
func AttachBridge(weave, other string) error { return ErrUnsupported }
