package docker

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/moby/moby/client"

	"github.com/seedf75a49c6/weave/ipam/address"
)

// ReleaseStale frees the addresses the IPAM driver filed under their own
// text that no container uses any more: dockerd's ReleaseAddress fails
// while the router is down, so a container removed then leaves its address
// allocated. Only addresses inside the pools of networks whose IPAM driver
// is weavemesh are considered, and never one this plugin instance handed
// out (a docker run may be between RequestAddress and its endpoint). It
// returns how many it released.
func (p *Plugin) ReleaseStale(ctx context.Context, api EngineClient) (int, error) {
	if p.cfg.IPAM == nil {
		return 0, nil
	}
	pools, inUse, err := dockerAddresses(ctx, api)
	if err != nil {
		return 0, err
	}
	owned, err := p.cfg.IPAM.Owned()
	if err != nil {
		return 0, fmt.Errorf("list IPAM allocations: %w", err)
	}
	released := 0
	for ident, cs := range owned {
		for _, c := range cs {
			ip := c.Addr.NetIP()
			if ident != c.Addr.String() || inUse[ip] || p.handedOut(ip) || !inAny(pools, ip) {
				continue
			}
			if err := p.cfg.IPAM.Free(ident, c.Addr); err == nil {
				released++
				p.log.Info("released the address of a Docker container removed while the router was down", "address", ip.String())
			}
		}
	}
	return released, nil
}

// dockerAddresses lists the subnets of weavemesh-IPAM networks and the
// addresses their endpoints use.
func dockerAddresses(ctx context.Context, api EngineClient) ([]netip.Prefix, map[netip.Addr]bool, error) {
	list, err := api.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list Docker networks: %w", err)
	}
	var pools []netip.Prefix
	inUse := map[netip.Addr]bool{}
	for _, n := range list.Items {
		if n.IPAM.Driver != MeshDriverName {
			continue
		}
		res, err := api.NetworkInspect(ctx, n.ID, client.NetworkInspectOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("inspect Docker network %s: %w", n.Name, err)
		}
		for _, cfg := range res.Network.IPAM.Config {
			pools = append(pools, cfg.Subnet)
		}
		for _, ep := range res.Network.Containers {
			inUse[ep.IPv4Address.Addr()] = true
		}
	}
	return pools, inUse, nil
}

func inAny(pools []netip.Prefix, ip netip.Addr) bool {
	for _, p := range pools {
		if p.IsValid() && p.Contains(ip) {
			return true
		}
	}
	return false
}

// noteHandedOut remembers an address this instance gave a container.
func (p *Plugin) noteHandedOut(c address.CIDR) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.given[c.Addr.NetIP()] = true
	if p.cfg.V2 {
		p.holds[c.Addr.NetIP()] = 1
	}
}

// hold counts one more holder of ip when, under V2, it is already handed
// out; it reports whether it was.
func (p *Plugin) hold(ip netip.Addr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !ip.IsValid() || p.holds[ip] == 0 {
		return false
	}
	p.holds[ip]++
	return true
}

// unhold drops one holder of ip and reports whether another remains (the
// address must then stay allocated).
func (p *Plugin) unhold(ip netip.Addr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holds[ip] > 1 {
		p.holds[ip]--
		return true
	}
	delete(p.holds, ip)
	return false
}

func (p *Plugin) handedOut(ip netip.Addr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.given[ip]
}
