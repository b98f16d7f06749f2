package cni

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/seedf75a49c6/weave/internal/netdev"
	"github.com/seedf75a49c6/weave/internal/netns"
)

// HostVethName is the host end of an attachment's veth: vethwepl and 7
// hex digits of a hash of container ID and interface name (container IDs
// such as cnitool's share their first characters, so a prefix of the ID,
// as `weave attach` uses, would collide).
func HostVethName(containerID, ifName string) string {
	sum := sha256.Sum256([]byte(containerID + "/" + ifName))
	return netdev.ContainerVethPrefix + hex.EncodeToString(sum[:])[:7]
}

// plumb makes the veth, puts the addresses and routes in the container
// and returns the result.
func plumb(args *skel.CmdArgs, conf *NetConf, rec record, pl plan) (*current.Result, error) {
	mac, err := netdev.AttachContainer(netdev.AttachConfig{
		Bridge: conf.Bridge, NetNS: args.Netns, ContainerID: args.ContainerID, IfName: args.IfName,
		Addrs: pl.addrs, MTU: conf.MTU, HostIfName: rec.HostVeth, NoHairpin: !conf.hairpin(),
		NoMulticastRoute: true,
	})
	if err != nil {
		return nil, types.NewError(types.ErrInternal, "attach the container to bridge "+conf.Bridge+": "+err.Error(), "")
	}
	err = netns.Do(args.Netns, func() error { return addRoutes(args.IfName, pl) })
	if err != nil {
		return nil, types.NewError(types.ErrInternal, fmt.Sprintf("add routes in %s: %v", args.Netns, err), "")
	}
	br, err := bridgeOf(conf.Bridge)
	if err != nil {
		return nil, err
	}
	host, err := net.InterfaceByName(rec.HostVeth)
	if err != nil {
		return nil, types.NewError(types.ErrInternal, "look up "+rec.HostVeth+": "+err.Error(), "")
	}
	return buildResult(br, host.HardwareAddr, mac, args, pl, conf.DNS), nil
}

// addRoutes runs inside the container: each route via its gateway, with a
// link route to a gateway outside every address's subnet first.
func addRoutes(ifName string, pl plan) error {
	link, err := netlink.LinkByName(ifName)
	if err != nil {
		return fmt.Errorf("look up %s: %w", ifName, err)
	}
	idx := link.Attrs().Index
	for _, r := range pl.routes {
		if r.gw.IsValid() && !onLink(pl.addrs, r.gw) {
			gwRoute := &netlink.Route{LinkIndex: idx, Dst: prefixIPNet(netip.PrefixFrom(r.gw, 32)), Scope: netlink.SCOPE_LINK}
			if err := routeAdd(gwRoute); err != nil {
				return err
			}
		}
		nr := &netlink.Route{LinkIndex: idx, Dst: prefixIPNet(r.dst)}
		if r.gw.IsValid() {
			nr.Gw = r.gw.AsSlice()
		} else {
			nr.Scope = netlink.SCOPE_LINK
		}
		if err := routeAdd(nr); err != nil {
			return err
		}
	}
	return nil
}

func routeAdd(r *netlink.Route) error {
	if err := netlink.RouteAdd(r); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("add route %s via %s: %w", r.Dst, r.Gw, err)
	}
	return nil
}

func onLink(addrs []netip.Prefix, ip netip.Addr) bool {
	for _, a := range addrs {
		if a.Masked().Contains(ip) {
			return true
		}
	}
	return false
}

// buildResult shapes the current-version result: interfaces bridge, host
// veth, container interface (index 2, which every IP names).
func buildResult(br bridge, hostMAC, mac net.HardwareAddr, args *skel.CmdArgs, pl plan, dns types.DNS) *current.Result {
	res := &current.Result{
		CNIVersion: current.ImplementedSpecVersion,
		Interfaces: []*current.Interface{
			{Name: br.name, Mac: br.mac.String()},
			{Name: HostVethName(args.ContainerID, args.IfName), Mac: hostMAC.String()},
			{Name: args.IfName, Mac: mac.String(), Sandbox: args.Netns},
		},
		DNS: dns,
	}
	for _, a := range pl.addrs {
		ipc := &current.IPConfig{Address: *prefixIPNet(a), Interface: current.Int(2)}
		if pl.gw.IsValid() && a.Addr().Is4() == pl.gw.Is4() {
			ipc.Gateway = pl.gw.AsSlice()
		}
		res.IPs = append(res.IPs, ipc)
	}
	res.Routes = resultRoutes(pl.routes)
	return res
}
