package cni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/seedf75a49c6/weave/internal/netdev"
)

func prevResult(conf *types.PluginConf) (*current.Result, error) {
	if err := version.ParsePrevResult(conf); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "parse prevResult: "+err.Error(), "")
	}
	if conf.PrevResult == nil {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "CHECK needs prevResult in the network config", "")
	}
	res, err := current.NewResultFromResult(conf.PrevResult)
	if err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "convert prevResult: "+err.Error(), "")
	}
	return res, nil
}

func drift(format string, a ...any) error {
	return types.NewError(ErrDrift, fmt.Sprintf(format, a...), "")
}

// checkIPAM verifies IPAM still holds prevResult's addresses under the
// attachment's ident, or, for an attachment 2.8.1 made on another
// interface than eth0, under the bare container ID it used.
func (p *Plugin) checkIPAM(ctx context.Context, rec record, prev *current.Result) error {
	var held []netip.Prefix
	var missing netip.Prefix
	for _, id := range slices.Compact([]string{rec.ident(), rec.ContainerID}) {
		h, err := p.API.LookupIP(ctx, id)
		if err != nil && !(isStatus(err, 404)) {
			return p.routerError("look up the addresses of "+id, err)
		}
		held = append(held, h...)
		if missing = firstMissing(held, prev); !missing.IsValid() {
			return nil
		}
	}
	return drift("IPAM no longer holds %s for %s", missing, rec.ident())
}

// firstMissing is the first address of prev not in held (zero if none).
func firstMissing(held []netip.Prefix, prev *current.Result) netip.Prefix {
	for _, ip := range prev.IPs {
		if want := ipnetPrefix(ip.Address); !slices.Contains(held, want) {
			return want
		}
	}
	return netip.Prefix{}
}

func (p *Plugin) gc(ctx context.Context, st store, valid []types.GCAttachment) error {
	keep := map[string]bool{}
	for _, v := range valid {
		keep[attachmentKey(v.ContainerID, v.IfName)] = true
	}
	recs, err := st.list()
	errs := []error{err}
	for _, r := range recs {
		if keep[attachmentKey(r.ContainerID, r.IfName)] {
			continue
		}
		if err := p.collect(ctx, st, r); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return types.NewError(types.ErrInternal, "GC: "+err.Error(), "")
	}
	return nil
}

// collect removes one stale attachment: its veth, its addresses (when
// the weave router gave them; a delegate's GC frees its own), its record.
func (p *Plugin) collect(ctx context.Context, st store, r record) error {
	if r.HostVeth != "" {
		if err := netdev.DeleteLink(r.HostVeth); err != nil {
			return err
		}
	}
	if r.IPAMType == "" || r.IPAMType == IPAMType {
		if err := p.release(ctx, r.ident(), r.Addrs); err != nil {
			return err
		}
	}
	return st.remove(r.ContainerID, r.IfName)
}

func resultRoutes(rs []route) []*types.Route {
	var out []*types.Route
	for _, r := range rs {
		tr := &types.Route{Dst: *prefixIPNet(r.dst)}
		if r.gw.IsValid() {
			tr.GW = r.gw.AsSlice()
		}
		out = append(out, tr)
	}
	return out
}

func prefixIPNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if p.Addr().Is6() {
		bits = 128
	}
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), bits)}
}

func ipnetPrefix(n net.IPNet) netip.Prefix {
	a, _ := netip.AddrFromSlice(n.IP)
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones)
}
