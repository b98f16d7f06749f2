package docker

import (
	"fmt"
	"net/netip"

	"github.com/docker/go-plugins-helpers/network"

	"github.com/seedf75a49c6/weave/internal/netdev"
)

// Join hands Docker the container end of the endpoint's veth, to be named
// ethwe<N> in the sandbox. When this network is the container's only one
// (the sandbox has no other interface yet), ethwe carries the default
// route, via the host's address on the weave bridge in the network's
// subnet, and Docker is told not to add docker_gwbridge; when the
// container already has another network, that network keeps the default
// route and ethwe gets only its subnet (and the multicast route).
func (d *netDriver) Join(r *network.JoinRequest) (*network.JoinResponse, error) {
	n, err := d.endpoint("Join", r.NetworkID, r.EndpointID)
	if err != nil {
		return nil, err
	}
	if r.SandboxKey == "" {
		return nil, badRequest("Join: SandboxKey is empty")
	}
	_, guest := netdev.EndpointNames(r.EndpointID)
	resp := &network.JoinResponse{
		InterfaceName: network.InterfaceName{SrcName: guest, DstPrefix: ContainerIfPrefix},
	}
	if n.Multicast {
		resp.StaticRoutes = []*network.StaticRoute{{Destination: "224.0.0.0/4", RouteType: routeConnected}}
	}
	others, err := d.p.cfg.Links.SandboxIfaces(r.SandboxKey)
	if err != nil {
		return nil, fmt.Errorf("join endpoint %s: %w", r.EndpointID, err)
	}
	resp.DisableGatewayService = true
	if others == 0 {
		gw, err := d.gateway(n)
		if err != nil {
			return nil, fmt.Errorf("join endpoint %s: %w", r.EndpointID, err)
		}
		if gw.IsValid() {
			resp.Gateway = gw.String()
		} else {
			resp.DisableGatewayService = false // no way out through weave: let Docker add docker_gwbridge
		}
	}
	d.p.log.Debug("endpoint joined", "endpoint", r.EndpointID, "sandbox", r.SandboxKey, "gateway", resp.Gateway, "others", others)
	return resp, nil
}

// gateway is the bridge's address inside one of the network's pools.
func (d *netDriver) gateway(n netRecord) (netip.Addr, error) {
	addrs, err := d.p.cfg.Links.BridgeAddrs(d.p.cfg.Bridge)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, pool := range n.Pools {
		p, err := netip.ParsePrefix(pool)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p.Contains(a.Addr()) {
				return a.Addr(), nil
			}
		}
	}
	return netip.Addr{}, nil
}

func (d *netDriver) Leave(r *network.LeaveRequest) error {
	_, err := d.endpoint("Leave", r.NetworkID, r.EndpointID)
	return err
}

func (d *netDriver) DiscoverNew(*network.DiscoveryNotification) error    { return nil }
func (d *netDriver) DiscoverDelete(*network.DiscoveryNotification) error { return nil }

func (d *netDriver) ProgramExternalConnectivity(r *network.ProgramExternalConnectivityRequest) error {
	_, err := d.network("ProgramExternalConnectivity", r.NetworkID)
	return err
}

func (d *netDriver) RevokeExternalConnectivity(r *network.RevokeExternalConnectivityRequest) error {
	_, err := d.network("RevokeExternalConnectivity", r.NetworkID)
	return err
}
