package cni

import (
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/ns"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/seedf75a49c6/weave/internal/netdev"
	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/nlsafe"
)

// stderr receives diagnostics the runtime logs (stdout is the result).
var stderr io.Writer = os.Stderr

// netDel removes the container's interface (when its netns still exists;
// CNI_NETNS may be empty or gone), the host veth, and the addresses. An
// attachment that does not exist is success.
func (p *Plugin) netDel(args *skel.CmdArgs) error {
	conf, err := ParseNetConf(args.StdinData)
	if err != nil {
		return err
	}
	p = p.at(conf.HTTPAddr)
	st := newStore(conf.DataDir, netPluginName, conf.Name)
	rec, _, err := st.loadOrNew(args.ContainerID, args.IfName, args.Netns)
	if err != nil {
		fmt.Fprintf(stderr, "weave-net: %v; releasing every address of %s\n", err, rec.ident())
	}
	if err := removeContainerIf(args.Netns, args.IfName); err != nil {
		return err
	}
	if err := netdev.DeleteLink(HostVethName(args.ContainerID, args.IfName)); err != nil {
		return types.NewError(types.ErrInternal, err.Error(), "")
	}
	ctx, cancel := p.context()
	defer cancel()
	if conf.IPAM.ours() {
		err = p.release(ctx, rec.ident(), rec.Addrs)
	} else {
		err = invoke.DelegateDel(ctx, conf.IPAM.Type, args.StdinData, nil)
	}
	if err != nil {
		return err // the record stays, so a later DEL or GC retries
	}
	return st.remove(args.ContainerID, args.IfName)
}

// removeContainerIf deletes ifName in the namespace at path; an empty,
// vanished or unopenable path means the kernel already took the veth.
func removeContainerIf(path, ifName string) error {
	if path == "" {
		return nil
	}
	h, err := vnetns.GetFromPath(path)
	if err != nil {
		return nil
	}
	h.Close()
	if same, terr := ns.CheckNetNS(path); terr != nil {
		return terr
	} else if same { // never delete the host's own CNI_IFNAME
		return types.NewError(types.ErrInvalidNetNS,
			fmt.Sprintf("CNI_NETNS %q is the host's own network namespace; not deleting %s there", path, ifName), "")
	}
	if err := netdev.DetachContainer(path, ifName, nil); err != nil {
		return types.NewError(types.ErrInternal, err.Error(), "")
	}
	return nil
}

// netCheck compares the container with prevResult.
func (p *Plugin) netCheck(args *skel.CmdArgs) error {
	conf, err := ParseNetConf(args.StdinData)
	if err != nil {
		return err
	}
	p = p.at(conf.HTTPAddr)
	prev, err := prevResult(&conf.PluginConf)
	if err != nil {
		return err
	}
	if err := checkInside(args, prev); err != nil {
		return err
	}
	if err := checkHostVeth(conf.Bridge, HostVethName(args.ContainerID, args.IfName)); err != nil {
		return err
	}
	ctx, cancel := p.context()
	defer cancel()
	if !conf.IPAM.ours() {
		return invoke.DelegateCheck(ctx, conf.IPAM.Type, args.StdinData, nil)
	}
	rec, _, _ := newStore(conf.DataDir, netPluginName, conf.Name).loadOrNew(args.ContainerID, args.IfName, args.Netns)
	return p.checkIPAM(ctx, rec, prev)
}

// checkInside verifies the interface, MAC, addresses and routes of
// prevResult in the container.
func checkInside(args *skel.CmdArgs, prev *current.Result) error {
	idx := -1
	for i, ifc := range prev.Interfaces {
		if ifc.Name == args.IfName && ifc.Sandbox != "" {
			idx = i
		}
	}
	if idx < 0 {
		return types.NewError(types.ErrInvalidNetworkConfig, "prevResult has no interface "+args.IfName+" in a sandbox", "")
	}
	return netns.Do(args.Netns, func() error {
		link, err := netlink.LinkByName(args.IfName)
		if err != nil {
			return types.NewError(types.ErrUnknownContainer, fmt.Sprintf("interface %s is gone from %s", args.IfName, args.Netns), err.Error())
		}
		if m := prev.Interfaces[idx].Mac; m != "" && m != link.Attrs().HardwareAddr.String() {
			return drift("interface %s in %s has MAC %s, prevResult says %s", args.IfName, args.Netns, link.Attrs().HardwareAddr, m)
		}
		if err := checkAddrs(link, prev, idx); err != nil {
			return err
		}
		return checkRoutes(link, prev.Routes)
	})
}

func checkAddrs(link netlink.Link, prev *current.Result, idx int) error {
	have, err := nlsafe.AddrList(nil, link, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("list addresses of %s: %w", link.Attrs().Name, err)
	}
	for _, ip := range prev.IPs {
		if ip.Interface != nil && *ip.Interface != idx {
			continue
		}
		want := ipnetPrefix(ip.Address)
		found := false
		for _, h := range have {
			found = found || ipnetPrefix(*h.IPNet) == want
		}
		if !found {
			return drift("interface %s lacks address %s of prevResult", link.Attrs().Name, want)
		}
	}
	return nil
}

func checkRoutes(link netlink.Link, want []*types.Route) error {
	have, err := nlsafe.RouteList(nil, link, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("list routes of %s: %w", link.Attrs().Name, err)
	}
	for _, w := range want {
		wd := ipnetPrefix(w.Dst)
		found := false
		for _, h := range have {
			hd := netip.MustParsePrefix("0.0.0.0/0")
			if h.Dst != nil {
				hd = ipnetPrefix(*h.Dst)
			}
			found = found || (hd == wd && (w.GW == nil || w.GW.Equal(h.Gw)))
		}
		if !found {
			return drift("interface %s lacks route %s via %s of prevResult", link.Attrs().Name, wd, w.GW)
		}
	}
	return nil
}

func checkHostVeth(bridgeName, name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return drift("host veth %s is gone: %v", name, err)
	}
	br, err := netlink.LinkByName(bridgeName)
	if err != nil {
		return drift("bridge %s is gone: %v", bridgeName, err)
	}
	if l.Attrs().MasterIndex != br.Attrs().Index {
		return drift("host veth %s is not on bridge %s", name, bridgeName)
	}
	return nil
}

// netGC releases what this plugin recorded for attachments the runtime
// no longer lists; nothing else.
func (p *Plugin) netGC(args *skel.CmdArgs) error {
	conf, err := ParseNetConf(args.StdinData)
	if err != nil {
		return err
	}
	p = p.at(conf.HTTPAddr)
	if !gcRequested(args.StdinData) {
		fmt.Fprintln(stderr, "weave-net: GC without cni.dev/valid-attachments: nothing released")
		return nil
	}
	ctx, cancel := p.context()
	defer cancel()
	err = p.gc(ctx, newStore(conf.DataDir, netPluginName, conf.Name), conf.PluginConf.ValidAttachments)
	if err == nil && !conf.IPAM.ours() {
		err = invoke.DelegateGC(ctx, conf.IPAM.Type, args.StdinData, nil)
	}
	return err
}

// netStatus: the bridge exists and the router (or the delegate) is ready.
func (p *Plugin) netStatus(args *skel.CmdArgs) error {
	conf, err := ParseNetConf(args.StdinData)
	if err != nil {
		return err
	}
	p = p.at(conf.HTTPAddr)
	if _, err := bridgeOf(conf.Bridge); err != nil {
		return types.NewError(types.ErrPluginNotAvailable, err.(*types.Error).Msg, "")
	}
	if !conf.IPAM.ours() {
		ctx, cancel := p.context()
		defer cancel()
		return invoke.DelegateStatus(ctx, conf.IPAM.Type, args.StdinData, nil)
	}
	return p.routerStatus()
}
