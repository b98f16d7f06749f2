// Package netdev creates and removes the kernel objects weave needs on a
// host: the weave bridge and its capture veth pair, container veths, the
// iptables rules that let bridged traffic pass, and exposed host addresses.
// Linux only; every call acts in the calling goroutine's network namespace
// unless a namespace path is given (to act in another namespace, wrap the call
// in internal/netns.Do). Other platforms get ErrUnsupported.
//
// Layout on a host (bridge mode, as Weave Net 2.8.1):
//
//	container ns: ethwe ── vethwepl<id> ─┐
//	                                     weave (bridge, MAC = peer name)
//	router:  vethwe-pcap ── vethwe-bridge ┘
//
// iptables: filter FORWARD accepts weave<->weave, weave->out and established
// replies into weave, and jumps to WEAVE-EXPOSE (accept into exposed
// subnets); nat POSTROUTING jumps to WEAVE (masquerade for exposed subnets);
// an empty WEAVE-CANARY chain in filter, nat and mangle reveals a flush.
package netdev

import (
	"errors"
	"net"
	"net/netip"
)

// Default interface names, as Weave Net 2.8.1 uses them.
const (
	DefaultBridge      = "weave"
	DefaultPcapIface   = "vethwe-pcap"   // router captures/injects here
	DefaultBridgeIface = "vethwe-bridge" // bridge port of the capture pair
	DefaultContainerIf = "ethwe"
)

// DefaultMTU is the bridge MTU when BridgeConfig.MTU is 0.
const DefaultMTU = 65535

// ErrUnsupported is returned on platforms other than Linux.
var ErrUnsupported = errors.New("netdev: only supported on Linux")

// BridgeConfig describes the weave bridge.
type BridgeConfig struct {
	Name        string           // bridge name, default "weave"
	MAC         net.HardwareAddr // bridge MAC = peer name; nil keeps the kernel's (random) MAC
	MTU         int              // MTU of the bridge, the capture pair and new container veths; default 65535
	PcapIface   string           // default "vethwe-pcap"
	BridgeIface string           // default "vethwe-bridge"
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
	HostIfName       string           // host-side veth name; default vethwepl<ShortID>
	NoHairpin        bool             // leave hairpin off on the host-side veth
}

// Docker endpoint veth names, as Weave Net 2.8.1's plugin uses them: the
// host end vethwl<id> is a bridge port, the container end vethwg<id> is
// moved into the sandbox and renamed by Docker.
const (
	EndpointVethPrefix = "vethwl"
	EndpointPeerPrefix = "vethwg"
)

// EndpointNames returns the host- and container-side veth names of a
// Docker endpoint: the prefixes plus the first 9 characters of its ID.
func EndpointNames(endpointID string) (host, guest string) {
	id := endpointID
	if len(id) > 9 {
		id = id[:9]
	}
	return EndpointVethPrefix + id, EndpointPeerPrefix + id
}

// Iface is one interface's name, MAC and IPv4 addresses.
type Iface struct {
	Name  string
	MAC   net.HardwareAddr
	Addrs []netip.Prefix
}
