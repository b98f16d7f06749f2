package cni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/ns"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	vnetns "github.com/vishvananda/netns"

	"github.com/seedf75a49c6/weave/internal/netdev"
)

// ExposeIdent owns the bridge addresses in IPAM (as `weave expose`).
const ExposeIdent = "weave:expose"

// plan is the addressing of one attachment.
type plan struct {
	addrs  []netip.Prefix
	gw     netip.Addr
	routes []route // gw filled in
}

func (p *Plugin) netAdd(args *skel.CmdArgs) error {
	conf, err := ParseNetConf(args.StdinData)
	if err != nil {
		return err
	}
	p = p.at(conf.HTTPAddr)
	if err := checkTargetNS(args.Netns, args.IfName); err != nil {
		return err
	}
	br, err := bridgeOf(conf.Bridge)
	if err != nil {
		return err
	}
	ctx, cancel := p.context()
	defer cancel()
	st := newStore(conf.DataDir, netPluginName, conf.Name)
	rec := newRecord(args.ContainerID, args.IfName, args.Netns)
	rec.HostVeth, rec.IPAMType = HostVethName(args.ContainerID, args.IfName), conf.IPAM.Type
	if err := st.save(rec); err != nil { // before allocating: GC can find a crash's leftovers
		return types.NewError(types.ErrIOFailure, err.Error(), "")
	}
	pl, err := p.netPlan(ctx, args, conf, br, st, &rec)
	if err == nil {
		var res *current.Result
		if res, err = plumb(args, conf, rec, pl); err == nil {
			return types.PrintResult(res, conf.CNIVersion)
		}
	}
	if uerr := p.undoAdd(ctx, args, conf, st, rec); uerr != nil {
		fmt.Fprintf(stderr, "weave-net: cleaning up after a failed ADD: %v\n", uerr)
	}
	return err
}

// checkTargetNS refuses a missing netns, the plugin's own (host) netns,
// and an interface name already taken in the container.
func checkTargetNS(path, ifName string) error {
	h, err := vnetns.GetFromPath(path)
	if err != nil {
		return types.NewError(types.ErrInvalidNetNS, fmt.Sprintf("CNI_NETNS %q is not a network namespace: %v", path, err), "")
	}
	h.Close()
	if same, terr := ns.CheckNetNS(path); terr != nil {
		return terr
	} else if same {
		return types.NewError(types.ErrInvalidNetNS,
			fmt.Sprintf("CNI_NETNS %q is the host's own network namespace; refusing to attach it to the weave bridge", path), "")
	}
	_, _, exists, err := netdev.ContainerAddrs(path, ifName)
	if err != nil {
		return types.NewError(types.ErrInvalidNetNS, err.Error(), "")
	}
	if exists {
		return types.NewError(types.ErrInvalidEnvironmentVariables,
			fmt.Sprintf("CNI_IFNAME %q already exists in %s", ifName, path), "")
	}
	return nil
}

// bridge is the weave bridge as seen from the host namespace.
type bridge struct {
	name  string
	mac   net.HardwareAddr
	addrs []netip.Prefix
}

func bridgeOf(name string) (bridge, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return bridge{}, types.NewError(types.ErrTryAgainLater,
			fmt.Sprintf("bridge %q not found: is weave running? start it with `weave launch`", name), err.Error())
	}
	b := bridge{name: name, mac: ifi.HardwareAddr}
	addrs, err := ifi.Addrs()
	if err != nil {
		return bridge{}, types.NewError(types.ErrInternal, fmt.Sprintf("list addresses of bridge %s: %v", name, err), "")
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			ip, _ := netip.AddrFromSlice(ipn.IP)
			ones, _ := ipn.Mask.Size()
			b.addrs = append(b.addrs, netip.PrefixFrom(ip.Unmap(), ones))
		}
	}
	return b, nil
}

// netPlan allocates the addresses (ours or the delegate's), records them
// and picks the gateway and routes.
func (p *Plugin) netPlan(ctx context.Context, args *skel.CmdArgs, conf *NetConf, br bridge, st store, rec *record) (plan, error) {
	if !conf.IPAM.ours() {
		return p.delegatedPlan(ctx, args, conf, st, rec)
	}
	addr, err := p.allocate(ctx, rec.ident(), &conf.IPAM)
	if err != nil {
		return plan{}, err
	}
	rec.Addrs = []netip.Prefix{addr}
	if err := st.save(*rec); err != nil {
		return plan{}, types.NewError(types.ErrIOFailure, err.Error(), "")
	}
	pl := plan{addrs: rec.Addrs, gw: conf.IPAM.gateway}
	if !pl.gw.IsValid() {
		if pl.gw, err = p.bridgeGateway(ctx, br, addr); err != nil {
			return plan{}, err
		}
	}
	pl.routes = withGateway(conf.IPAM.routes, pl.gw)
	return pl, nil
}

// withGateway fills unset route gateways; no routes means a default route.
func withGateway(rs []route, gw netip.Addr) []route {
	if len(rs) == 0 {
		rs = []route{{dst: netip.MustParsePrefix("0.0.0.0/0")}}
	}
	out := make([]route, len(rs))
	for i, r := range rs {
		if !r.gw.IsValid() {
			r.gw = gw
		}
		out[i] = r
	}
	return out
}

// bridgeGateway is the bridge's address in addr's subnet; when it has
// none, one is allocated for weave:expose and the router exposes it (as
// Weave Net 2.8.1's plugin does).
func (p *Plugin) bridgeGateway(ctx context.Context, br bridge, addr netip.Prefix) (netip.Addr, error) {
	subnet := addr.Masked()
	for _, b := range br.addrs {
		if subnet.Contains(b.Addr()) {
			return b.Addr(), nil
		}
	}
	ex, err := p.API.AllocateIP(ctx, ExposeIdent, subnet)
	if err != nil {
		return netip.Addr{}, p.routerError("allocate the bridge's address in "+subnet.String(), err)
	}
	if err := p.API.Expose(ctx, ex, false); err != nil {
		return netip.Addr{}, p.routerError("expose the bridge at "+ex.String(), err)
	}
	return ex.Addr(), nil
}

// delegatedPlan runs the configured IPAM plugin.
func (p *Plugin) delegatedPlan(ctx context.Context, args *skel.CmdArgs, conf *NetConf, st store, rec *record) (plan, error) {
	r, err := invoke.DelegateAdd(ctx, conf.IPAM.Type, args.StdinData, nil)
	if err != nil {
		return plan{}, err
	}
	res, err := current.NewResultFromResult(r)
	if err != nil {
		return plan{}, types.NewError(types.ErrDecodingFailure, "result of IPAM plugin "+conf.IPAM.Type+": "+err.Error(), "")
	}
	var pl plan
	for _, ip := range res.IPs {
		a, _ := netip.AddrFromSlice(ip.Address.IP)
		ones, _ := ip.Address.Mask.Size()
		pl.addrs = append(pl.addrs, netip.PrefixFrom(a.Unmap(), ones))
		if g, ok := netip.AddrFromSlice(ip.Gateway); ok && !pl.gw.IsValid() {
			pl.gw = g.Unmap()
		}
	}
	if len(pl.addrs) == 0 {
		return plan{}, types.NewError(types.ErrInvalidNetworkConfig, "IPAM plugin "+conf.IPAM.Type+" returned no address", "")
	}
	rec.Addrs = pl.addrs
	if err := st.save(*rec); err != nil {
		return plan{}, types.NewError(types.ErrIOFailure, err.Error(), "")
	}
	var rs []route
	for _, r := range res.Routes {
		rt := route{dst: ipnetPrefix(r.Dst)}
		rt.gw, _ = netip.AddrFromSlice(r.GW)
		rt.gw = rt.gw.Unmap()
		rs = append(rs, rt)
	}
	if len(rs) > 0 || pl.gw.IsValid() {
		pl.routes = withGateway(rs, pl.gw)
	}
	return pl, nil
}

// undoAdd removes what a failed ADD made: the veth, the addresses, the record.
func (p *Plugin) undoAdd(ctx context.Context, args *skel.CmdArgs, conf *NetConf, st store, rec record) error {
	errs := []error{netdev.DeleteLink(rec.HostVeth)}
	if conf.IPAM.ours() && len(rec.Addrs) > 0 {
		errs = append(errs, p.release(ctx, rec.ident(), rec.Addrs))
	} else if len(rec.Addrs) > 0 {
		errs = append(errs, invoke.DelegateDel(ctx, conf.IPAM.Type, args.StdinData, nil))
	}
	if err := errors.Join(errs...); err != nil {
		return err // keep the record: GC retries
	}
	return st.remove(args.ContainerID, args.IfName)
}
