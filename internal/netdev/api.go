// Package netdev creates and removes the kernel objects weave needs on a
// host: the weave bridge and its capture veth pair, container veths, the
// iptables rules that let bridged traffic pass, and exposed host addresses.
// Linux only; every call acts in the calling goroutine's network namespace
// unless a namespace path is given.
package netdev

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"time"
)

// Default interface names, as Weave Net 2.8.1 uses them.
const (
	DefaultBridge      = "weave"
	DefaultPcapIface   = "vethwe-pcap"   // router captures/injects here
	DefaultBridgeIface = "vethwe-bridge" // bridge port of the capture pair
	DefaultContainerIf = "ethwe"
)

// BridgeConfig describes the weave bridge.
type BridgeConfig struct {
	Name        string           // bridge name, default "weave"
	MAC         net.HardwareAddr // bridge MAC = peer name
	MTU         int              // MTU of the bridge, the capture pair and new container veths
	PcapIface   string           // default "vethwe-pcap"
	BridgeIface string           // default "vethwe-bridge"
}

// EnsureBridge creates (or repairs) the bridge and the capture veth pair,
// sets MTU and MAC, disables TX checksum offload where the userspace path
// needs it, and brings everything up. Idempotent.
func EnsureBridge(cfg BridgeConfig) error { panic("TODO") }

// DestroyBridge deletes the bridge, the capture pair and every container
// veth (vethwepl*) still enslaved to it. Missing objects are not an error.
func DestroyBridge(name string) error { panic("TODO") }

// EnsureIPTables installs the rules that let traffic on the bridge pass on a
// host whose FORWARD policy is DROP, plus a WEAVE-CANARY chain used to
// detect flushes. Idempotent.
func EnsureIPTables(bridge string) error { panic("TODO") }

// RemoveIPTables removes every rule and chain EnsureIPTables and Expose add.
func RemoveIPTables(bridge string) error { panic("TODO") }

// MonitorIPTables re-applies EnsureIPTables (and re-exposes addresses) when
// the canary chain disappears, checking every interval, until ctx ends.
func MonitorIPTables(ctx context.Context, bridge string, interval time.Duration, log *slog.Logger) {
	panic("TODO")
}

// AttachConfig describes one container attachment.
type AttachConfig struct {
	Bridge           string           // default "weave"
	NetNS            string           // path of the target network namespace (/var/run/netns/x, /proc/PID/ns/net)
	ContainerID      string           // used to name the host-side veth vethwepl<first 7 chars>
	IfName           string           // default "ethwe"
	Addrs            []netip.Prefix   // addresses to add (may be empty)
	MTU              int              // 0 = bridge MTU
	MAC              net.HardwareAddr // optional fixed MAC for the container interface
	NoMulticastRoute bool             // skip 224.0.0.0/4 dev ethwe
}

// AttachContainer creates the veth (if missing), moves one end into the
// namespace as IfName, adds the addresses (idempotent), sets ARP sysctls,
// the multicast route, sends gratuitous ARP, and enslaves the host end with
// hairpin on. Returns the container interface MAC.
func AttachContainer(cfg AttachConfig) (net.HardwareAddr, error) { panic("TODO") }

// DetachContainer removes addrs from the container interface; with no addrs,
// or when no address remains, it deletes the interface.
func DetachContainer(netnsPath, ifName string, addrs []netip.Prefix) error { panic("TODO") }

// ContainerAddrs returns the MAC and IPv4 addresses of ifName inside the
// namespace; ok=false if the interface does not exist.
func ContainerAddrs(netnsPath, ifName string) (mac net.HardwareAddr, addrs []netip.Prefix, ok bool, err error) {
	panic("TODO")
}

// Expose adds addr to the bridge (host access to the overlay) and the NAT
// rules that masquerade traffic from it. Idempotent.
func Expose(bridge string, addr netip.Prefix) error { panic("TODO") }

// Hide removes an exposed address and its rules.
func Hide(bridge string, addr netip.Prefix) error { panic("TODO") }
