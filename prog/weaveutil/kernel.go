package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/seedf75a49c6/weave/internal/cli"
	"github.com/seedf75a49c6/weave/internal/netdev"
	"github.com/vishvananda/netlink"
)

// netdevKernel adapts internal/netdev to cli.Kernel.
type netdevKernel struct{}

var _ cli.Kernel = netdevKernel{}

func (netdevKernel) AttachContainer(r cli.AttachRequest) (net.HardwareAddr, error) {
	return netdev.AttachContainer(netdev.AttachConfig{
		Bridge: r.Bridge, NetNS: r.NetNS, ContainerID: r.ContainerID, IfName: r.IfName,
		Addrs: r.Addrs, NoMulticastRoute: r.NoMulticastRoute,
	})
}

func (netdevKernel) DetachContainer(ns, ifName string, addrs []netip.Prefix) error {
	return netdev.DetachContainer(ns, ifName, addrs)
}

func (netdevKernel) ContainerAddrs(ns, ifName string) (net.HardwareAddr, []netip.Prefix, bool, error) {
	return netdev.ContainerAddrs(ns, ifName)
}

// DestroyBridge also deletes the fast path's vxw-* VXLAN devices (and so
// their FDB entries), which are not container veths.
func (netdevKernel) DestroyBridge(name string) error {
	return errors.Join(destroyVXLAN(), netdev.DestroyBridge(name))
}

// vxlanPrefix is fastdp.DevicePrefix; weaveutil (also the CNI binary)
// does not import the fastdp package.
const vxlanPrefix = "vxw-"

// destroyVXLAN deletes every vxw-* VXLAN device the fast path created.
func destroyVXLAN() error {
	links, err := netlink.LinkList()
	if err != nil {
		return fmt.Errorf("list links: %w", err)
	}
	var errs []error
	for _, l := range links {
		if l.Type() == "vxlan" && strings.HasPrefix(l.Attrs().Name, vxlanPrefix) {
			if err := netlink.LinkDel(l); err != nil {
				errs = append(errs, fmt.Errorf("delete vxlan device %s: %w", l.Attrs().Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// MeshAddrs reads every ethwe* interface in the namespace.
func (netdevKernel) MeshAddrs(ns string) (net.HardwareAddr, []netip.Prefix, bool, error) {
	ifs, err := netdev.NamespaceIfaces(ns, cli.ContainerIf)
	if err != nil || len(ifs) == 0 {
		return nil, nil, false, err
	}
	var addrs []netip.Prefix
	for _, i := range ifs {
		addrs = append(addrs, i.Addrs...)
	}
	return ifs[0].MAC, addrs, true, nil
}

func (netdevKernel) RemoveIPTables(bridge string) error  { return netdev.RemoveIPTables(bridge) }
func (netdevKernel) Hide(b string, a netip.Prefix) error { return netdev.Hide(b, a) }

// BridgeAddrs reads the bridge with the standard library: it is in the
// namespace weaveutil runs in.
func (netdevKernel) BridgeAddrs(name string) (net.HardwareAddr, []netip.Prefix, bool, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		if isNoSuchInterface(err) {
			return nil, nil, false, nil
		}
		return nil, nil, false, fmt.Errorf("look up bridge %s: %w", name, err)
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return nil, nil, false, fmt.Errorf("list addresses of %s: %w", name, err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.To4() == nil {
			continue
		}
		ip, _ := netip.AddrFromSlice(ipn.IP.To4())
		ones, _ := ipn.Mask.Size()
		out = append(out, netip.PrefixFrom(ip, ones))
	}
	return ifi.HardwareAddr, out, true, nil
}

// isNoSuchInterface recognises net's unexported errNoSuchInterface.
func isNoSuchInterface(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) {
		err = op.Err
	}
	return err != nil && err.Error() == "no such network interface"
}
