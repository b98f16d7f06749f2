package docker

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/docker/go-plugins-helpers/ipam"

	weaveipam "github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/ipam/address"
)

// Address spaces and option keys of the IPAM protocol.
const (
	LocalAddressSpace  = "weavelocal"
	GlobalAddressSpace = "weaveglobal"
	optRequestType     = "RequestAddressType"
	gatewayRequest     = "com.docker.network.gateway"
	poolIDPrefix       = "weave-"
)

// ipamDriver is the IpamDriver on weavemesh.sock: pools are subnets of the
// IPAM range, addresses come from the ring.
type ipamDriver struct{ p *Plugin }

var _ ipam.Ipam = (*ipamDriver)(nil)

func (d *ipamDriver) GetCapabilities() (*ipam.CapabilitiesResponse, error) {
	return &ipam.CapabilitiesResponse{}, nil
}

func (d *ipamDriver) GetDefaultAddressSpaces() (*ipam.AddressSpacesResponse, error) {
	return &ipam.AddressSpacesResponse{LocalDefaultAddressSpace: LocalAddressSpace, GlobalDefaultAddressSpace: GlobalAddressSpace}, nil
}

// pool is a decoded pool ID: the network's subnet and the range inside it
// addresses are allocated from (--ip-range; the subnet itself by default).
type pool struct{ subnet, iprange address.CIDR }

// id is "weave-<subnet>-<range>": dockerd stores it, so it must carry
// everything; the plugin keeps no pool state.
func (p pool) id() string { return poolIDPrefix + p.subnet.String() + "-" + p.iprange.String() }

func parsePoolID(id string) (pool, error) {
	rest, ok := strings.CutPrefix(id, poolIDPrefix)
	s, r, ok2 := strings.Cut(rest, "-")
	if !ok || !ok2 {
		return pool{}, badRequest("pool %q is not a weave pool (want weave-<subnet>-<range>)", id)
	}
	subnet, err1 := address.ParseCIDR(s)
	iprange, err2 := address.ParseCIDR(r)
	if err1 != nil || err2 != nil {
		return pool{}, badRequest("pool %q is not a weave pool: bad CIDR", id)
	}
	return pool{subnet: subnet, iprange: iprange}, nil
}

func (d *ipamDriver) RequestPool(r *ipam.RequestPoolRequest) (*ipam.RequestPoolResponse, error) {
	if r.V6 {
		return nil, badRequest("RequestPool: IPv6 is not supported by weave")
	}
	if r.AddressSpace != "" && r.AddressSpace != LocalAddressSpace && r.AddressSpace != GlobalAddressSpace {
		return nil, badRequest("RequestPool: unknown address space %q (want %s or %s)", r.AddressSpace, LocalAddressSpace, GlobalAddressSpace)
	}
	for k := range r.Options {
		return nil, badRequest("RequestPool: unknown IPAM option %q (weave takes none)", k)
	}
	p, err := d.poolFor(r.Pool, r.SubPool)
	if err != nil {
		return nil, err
	}
	d.p.log.Info("Docker pool requested", "subnet", p.subnet.String(), "range", p.iprange.String())
	return &ipam.RequestPoolResponse{PoolID: p.id(), Pool: p.subnet.String()}, nil
}

// poolFor checks a requested subnet (default: IPAM's default subnet) and
// range against the IPAM range.
func (d *ipamDriver) poolFor(subnetText, rangeText string) (pool, error) {
	universe := d.p.cfg.IPAM.Universe()
	subnet := d.p.cfg.IPAM.DefaultSubnet()
	if subnetText != "" {
		var err error
		if subnet, err = address.ParseCIDR(subnetText); err != nil {
			return pool{}, badRequest("RequestPool: subnet %q: %v", subnetText, err)
		}
		subnet = subnet.Network()
	}
	if !inside(subnet, universe) {
		return pool{}, badRequest("RequestPool: subnet %s is outside the weave IPAM range %s (--ipalloc-range)", subnet, universe)
	}
	p := pool{subnet: subnet, iprange: subnet}
	if rangeText != "" {
		r, err := address.ParseCIDR(rangeText)
		if err != nil {
			return pool{}, badRequest("RequestPool: range %q: %v", rangeText, err)
		}
		if p.iprange = r.Network(); !inside(p.iprange, subnet) {
			return pool{}, badRequest("RequestPool: range %s is outside subnet %s", p.iprange, subnet)
		}
	}
	return p, nil
}

// inside reports whether c lies wholly inside outer.
func inside(c, outer address.CIDR) bool {
	r, o := c.Range(), outer.Range()
	return r.Start >= o.Start && r.End <= o.End
}

func (d *ipamDriver) ReleasePool(r *ipam.ReleasePoolRequest) error {
	_, err := parsePoolID(r.PoolID)
	return err
}

func (d *ipamDriver) RequestAddress(r *ipam.RequestAddressRequest) (*ipam.RequestAddressResponse, error) {
	p, err := parsePoolID(r.PoolID)
	if err != nil {
		return nil, err
	}
	var want netip.Addr
	if r.Address != "" {
		if want, err = netip.ParseAddr(r.Address); err != nil || !want.Is4() {
			return nil, badRequest("RequestAddress: address %q is not an IPv4 address", r.Address)
		}
		if !p.subnet.Prefix().Contains(want) {
			return nil, badRequest("RequestAddress: address %s is outside pool %s", want, p.subnet)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.p.cfg.CallTimeout)
	defer cancel()
	var got address.CIDR
	if r.Options[optRequestType] == gatewayRequest {
		got, err = d.gatewayAddress(ctx, p, want)
	} else {
		got, err = d.containerAddress(ctx, p, want)
	}
	if err != nil {
		return nil, err
	}
	return &ipam.RequestAddressResponse{Address: got.String()}, nil
}

// containerAddress claims want, or allocates a fresh address in the pool's
// range, filed under the address itself (Weave 2.8.1's convention).
func (d *ipamDriver) containerAddress(ctx context.Context, p pool, want netip.Addr) (address.CIDR, error) {
	if d.p.hold(want) { // a swarm node asking for what its manager allocated
		a, _ := address.FromNetIP(want)
		return address.CIDR{Addr: a, PrefixLen: p.subnet.PrefixLen}, nil
	}
	if want.IsValid() {
		a, _ := address.FromNetIP(want)
		c := address.CIDR{Addr: a, PrefixLen: p.subnet.PrefixLen}
		if err := d.p.cfg.IPAM.Claim(ctx, a.String(), c, false); err != nil {
			return c, fmt.Errorf("RequestAddress: claim %s: %w", want, err)
		}
		d.p.noteHandedOut(c)
		return c, nil
	}
	c, err := d.p.cfg.IPAM.Allocate(ctx, weaveipam.NoContainerID, p.iprange)
	if err != nil {
		return c, fmt.Errorf("RequestAddress: allocate in %s: %w", p.iprange, err)
	}
	d.p.noteHandedOut(c)
	return address.CIDR{Addr: c.Addr, PrefixLen: p.subnet.PrefixLen}, nil
}

// gatewayAddress makes the host's address on the weave bridge in this
// subnet the network's gateway, exposing the host there (weave expose)
// when it is not yet: containers whose only network this is route through
// it, masqueraded, to the outside.
func (d *ipamDriver) gatewayAddress(ctx context.Context, p pool, want netip.Addr) (address.CIDR, error) {
	addrs, err := d.p.cfg.Links.BridgeAddrs(d.p.cfg.Bridge)
	if err != nil {
		return address.CIDR{}, fmt.Errorf("RequestAddress (gateway): %w", err)
	}
	for _, a := range addrs {
		if p.subnet.Prefix().Contains(a.Addr()) && (!want.IsValid() || want == a.Addr()) {
			c, _ := address.ParseCIDR(netip.PrefixFrom(a.Addr(), p.subnet.PrefixLen).String())
			return c, nil
		}
	}
	var c address.CIDR
	if want.IsValid() {
		a, _ := address.FromNetIP(want)
		c = address.CIDR{Addr: a, PrefixLen: p.subnet.PrefixLen}
		err = d.p.cfg.IPAM.Claim(ctx, ExposeIdent, c, false)
	} else {
		c, err = d.p.cfg.IPAM.Allocate(ctx, ExposeIdent, p.subnet)
	}
	if err != nil {
		return c, fmt.Errorf("RequestAddress (gateway) in %s: %w", p.subnet, err)
	}
	c.PrefixLen = p.subnet.PrefixLen
	if err := d.p.cfg.Links.Expose(d.p.cfg.Bridge, c.Prefix()); err != nil {
		return c, fmt.Errorf("RequestAddress (gateway) %s: %w", c, err)
	}
	d.p.log.Info("host exposed on the weave bridge as Docker gateway", "cidr", c.String())
	return c, nil
}

// ReleaseAddress frees a container address. A gateway (the host's own
// bridge address) stays: the host remains exposed until weave hide/reset.
func (d *ipamDriver) ReleaseAddress(r *ipam.ReleaseAddressRequest) error {
	p, err := parsePoolID(r.PoolID)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(r.Address)
	if err != nil || !ip.Is4() {
		return badRequest("ReleaseAddress: address %q is not an IPv4 address", r.Address)
	}
	if d.p.unhold(ip) {
		return nil // the other holder (manager or node) still has it
	}
	a, _ := address.FromNetIP(ip)
	ferr := d.p.cfg.IPAM.Free(a.String(), a)
	if ferr == nil {
		return nil
	}
	if addrs, err := d.p.cfg.Links.BridgeAddrs(d.p.cfg.Bridge); err == nil {
		for _, b := range addrs {
			if b.Addr() == ip {
				return nil
			}
		}
	}
	return fmt.Errorf("ReleaseAddress: %s in pool %s: %w", ip, p.subnet, ferr)
}
