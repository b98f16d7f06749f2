package cli

import (
	"errors"
	"net"
	"net/netip"
)

// ContainerIf is the interface name inside attached namespaces (Weave's ethwe).
const ContainerIf = "ethwe"

// AttachRequest mirrors netdev.AttachConfig for the fields the CLI sets.
type AttachRequest struct {
	Bridge           string
	NetNS            string         // namespace path
	ContainerID      string         // names the host veth vethwepl<first 7 chars>
	IfName           string         // ContainerIf
	Addrs            []netip.Prefix // explicit addresses
	NoMulticastRoute bool
}

// Kernel is what the CLI needs from internal/netdev. It is declared here,
// where it is consumed, so this package builds and tests without root and
// without netdev; prog/weaveutil passes the netdev-backed implementation.
type Kernel interface {
	AttachContainer(req AttachRequest) (net.HardwareAddr, error)
	DetachContainer(netnsPath, ifName string, addrs []netip.Prefix) error
	ContainerAddrs(netnsPath, ifName string) (net.HardwareAddr, []netip.Prefix, bool, error)
	DestroyBridge(name string) error
	RemoveIPTables(bridge string) error
	Hide(bridge string, addr netip.Prefix) error
	// BridgeAddrs returns the bridge's MAC and IPv4 addresses in the
	// current namespace; ok=false when there is no such interface.
	BridgeAddrs(name string) (mac net.HardwareAddr, addrs []netip.Prefix, ok bool, err error)
	// MeshAddrs returns the MAC of the first interface named ethwe* in
	// the namespace and the IPv4 addresses of all of them (the Docker
	// plugin's ethwe0, ethwe1, ...); ok=false when there is none.
	MeshAddrs(netnsPath string) (mac net.HardwareAddr, addrs []netip.Prefix, ok bool, err error)
	// AttachBridge joins bridge other to the weave bridge (weave attach-bridge).
	AttachBridge(weave, other string) error
}

// errNoKernel is what kernel verbs report when Config.Kernel is unset.
var errNoKernel = errors.New("no kernel backend configured (weaveutil wires internal/netdev)")

// noKernel fails every call; it keeps a nil Config.Kernel from panicking.
type noKernel struct{}

func (noKernel) AttachContainer(AttachRequest) (net.HardwareAddr, error) { return nil, errNoKernel }
func (noKernel) DetachContainer(string, string, []netip.Prefix) error    { return errNoKernel }
func (noKernel) ContainerAddrs(string, string) (net.HardwareAddr, []netip.Prefix, bool, error) {
	return nil, nil, false, errNoKernel
}
func (noKernel) DestroyBridge(string) error      { return errNoKernel }
func (noKernel) RemoveIPTables(string) error     { return errNoKernel }
func (noKernel) Hide(string, netip.Prefix) error { return errNoKernel }
func (noKernel) BridgeAddrs(string) (net.HardwareAddr, []netip.Prefix, bool, error) {
	return nil, nil, false, errNoKernel
}
func (noKernel) AttachBridge(string, string) error { return errNoKernel }
func (noKernel) MeshAddrs(string) (net.HardwareAddr, []netip.Prefix, bool, error) {
	return nil, nil, false, errNoKernel
}
