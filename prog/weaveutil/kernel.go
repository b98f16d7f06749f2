package main

import (
	"errors"
	"net"
	"net/netip"

	"github.com/seedf75a49c6/weave/fastdp"
	"github.com/seedf75a49c6/weave/internal/cli"
	"github.com/seedf75a49c6/weave/internal/netdev"
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

// DestroyBridge also deletes the fast path's VXLAN devices (and so their
// FDB entries), which are not container veths.
func (netdevKernel) DestroyBridge(name string) error {
	return errors.Join(netdev.DeleteLinks("vxlan", fastdp.DevicePrefix), netdev.DestroyBridge(name))
}

// RemoveIPTables also drops the router's NetworkPolicy guard table (inet
// weave-guard, weaver --expect-npc): a relaunch without --expect-npc must
// not find the bridge closed. weave-npc's own table is weave-npc's.
func (netdevKernel) RemoveIPTables(bridge string) error {
	return errors.Join(netdev.NewFirewall(bridge, "").Remove(), netdev.RemoveNPCGuard())
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

func (netdevKernel) AttachBridge(weave, other string) error {
	return netdev.AttachBridge(weave, other)
}

func (netdevKernel) Hide(bridge string, a netip.Prefix) error {
	return netdev.NewFirewall(bridge, "").Hide(a)
}

func (netdevKernel) BridgeAddrs(name string) (net.HardwareAddr, []netip.Prefix, bool, error) {
	return netdev.BridgeAddrs(name)
}
