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

// EnsureIPTables returns ErrUnsupported outside Linux.
func EnsureIPTables(bridge string) error { return ErrUnsupported }

// RemoveIPTables returns ErrUnsupported outside Linux.
func RemoveIPTables(bridge string) error { return ErrUnsupported }

// MonitorIPTables logs that it is unsupported and returns at once.
func MonitorIPTables(ctx context.Context, bridge string, interval time.Duration, log *slog.Logger) {
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

// Expose returns ErrUnsupported outside Linux.
func Expose(bridge string, addr netip.Prefix) error { return ErrUnsupported }

// Hide returns ErrUnsupported outside Linux.
func Hide(bridge string, addr netip.Prefix) error { return ErrUnsupported }

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
