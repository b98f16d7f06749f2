package docker

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"

	"github.com/docker/go-plugins-helpers/network"

	"github.com/seedf75a49c6/weave/internal/netdev"
)

// Docker's option keys in CreateNetwork.
const (
	optGeneric    = "com.docker.network.generic"
	optEnableIPv6 = "com.docker.network.enable_ipv6"
	dockerPrefix  = "com.docker."
	// routeConnected is libnetwork's RouteType for an on-link route.
	routeConnected = 1
)

// errBadRequest marks errors caused by the request, not by us.
var errBadRequest = errors.New("bad request")

func badRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, a...))
}

// netDriver is the NetworkDriver of one socket (name "weave" or "weavemesh").
type netDriver struct {
	p     *Plugin
	name  string
	scope string
}

var _ network.Driver = (*netDriver)(nil)

func (d *netDriver) GetCapabilities() (*network.CapabilitiesResponse, error) {
	return &network.CapabilitiesResponse{Scope: d.scope, ConnectivityScope: d.scope}, nil
}

func (d *netDriver) CreateNetwork(r *network.CreateNetworkRequest) error {
	if r.NetworkID == "" {
		return badRequest("CreateNetwork: NetworkID is empty")
	}
	mcast, err := parseNetworkOptions(r.Options)
	if err != nil {
		return fmt.Errorf("create network %s: %w", r.NetworkID, err)
	}
	if len(r.IPv6Data) > 0 {
		return badRequest("create network %s: IPv6 is not supported by weave", r.NetworkID)
	}
	rec := netRecord{ID: r.NetworkID, Driver: d.name, Multicast: mcast}
	for _, data := range r.IPv4Data {
		if data == nil {
			continue
		}
		if _, err := netip.ParsePrefix(data.Pool); err != nil {
			return badRequest("create network %s: pool %q is not a CIDR", r.NetworkID, data.Pool)
		}
		rec.Pools = append(rec.Pools, data.Pool)
	}
	if err := d.p.nets.put(rec); err != nil {
		return fmt.Errorf("create network %s: %w", r.NetworkID, err)
	}
	d.p.log.Info("Docker network created", "driver", d.name, "network", r.NetworkID, "pools", rec.Pools, "multicast", mcast)
	return nil
}

// parseNetworkOptions accepts Docker's own keys and, among the driver
// options (-o), only works.weave.multicast.
func parseNetworkOptions(opts map[string]any) (multicast bool, err error) {
	for k, v := range opts {
		switch {
		case k == optEnableIPv6:
			if on, _ := v.(bool); on {
				return false, badRequest("IPv6 is not supported by weave (drop --ipv6)")
			}
		case k == optGeneric:
			if multicast, err = parseDriverOptions(v); err != nil {
				return false, err
			}
		case !strings.HasPrefix(k, dockerPrefix):
			return false, badRequest("unknown network option %q", k)
		}
	}
	return multicast, nil
}

func parseDriverOptions(v any) (multicast bool, err error) {
	if v == nil {
		return false, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false, badRequest("network option %s: want an object, got %T", optGeneric, v)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case k == MulticastOption:
			if multicast, err = parseBoolOption(k, m[k]); err != nil {
				return false, err
			}
		case !strings.HasPrefix(k, dockerPrefix):
			return false, badRequest("unknown driver option %q (weave knows only %s)", k, MulticastOption)
		}
	}
	return multicast, nil
}

// parseBoolOption: -o works.weave.multicast alone means on.
func parseBoolOption(k string, v any) (bool, error) {
	s := fmt.Sprint(v)
	switch strings.ToLower(s) {
	case "", "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, badRequest("driver option %s=%q: want true or false", k, s)
}

func (d *netDriver) AllocateNetwork(*network.AllocateNetworkRequest) (*network.AllocateNetworkResponse, error) {
	return &network.AllocateNetworkResponse{}, nil // swarm managers only; nothing to allocate
}

func (d *netDriver) FreeNetwork(*network.FreeNetworkRequest) error { return nil }

func (d *netDriver) DeleteNetwork(r *network.DeleteNetworkRequest) error {
	ok, err := d.p.nets.remove(r.NetworkID)
	if err != nil {
		return fmt.Errorf("delete network %s: %w", r.NetworkID, err)
	}
	if !ok {
		return badRequest("delete network %s: no such network (not created through this plugin)", r.NetworkID)
	}
	d.p.log.Info("Docker network deleted", "network", r.NetworkID)
	return nil
}

// network returns the record of a known network.
func (d *netDriver) network(call, id string) (netRecord, error) {
	if id == "" {
		return netRecord{}, badRequest("%s: NetworkID is empty", call)
	}
	n, ok := d.p.nets.get(id)
	if !ok {
		return n, badRequest("%s: network %s does not exist (not created through this plugin)", call, id)
	}
	return n, nil
}

// endpoint checks that the network is known and the endpoint's veth exists.
func (d *netDriver) endpoint(call, netID, epID string) (netRecord, error) {
	n, err := d.network(call, netID)
	if err != nil {
		return n, err
	}
	if epID == "" {
		return n, badRequest("%s: EndpointID is empty", call)
	}
	ok, err := d.p.cfg.Links.EndpointExists(epID)
	if err != nil {
		return n, fmt.Errorf("%s: %w", call, err)
	}
	if !ok {
		return n, badRequest("%s: endpoint %s does not exist in network %s", call, epID, netID)
	}
	return n, nil
}

func (d *netDriver) CreateEndpoint(r *network.CreateEndpointRequest) (*network.CreateEndpointResponse, error) {
	if _, err := d.network("CreateEndpoint", r.NetworkID); err != nil {
		return nil, err
	}
	if r.EndpointID == "" {
		return nil, badRequest("CreateEndpoint: EndpointID is empty")
	}
	var mac net.HardwareAddr
	if r.Interface != nil && r.Interface.MacAddress != "" {
		var err error
		if mac, err = net.ParseMAC(r.Interface.MacAddress); err != nil {
			return nil, badRequest("CreateEndpoint %s: MacAddress %q: %v", r.EndpointID, r.Interface.MacAddress, err)
		}
	}
	got, err := d.p.cfg.Links.CreateEndpoint(d.p.cfg.Bridge, r.EndpointID, mac)
	if err != nil {
		return nil, fmt.Errorf("create endpoint %s: %w", r.EndpointID, err)
	}
	d.p.log.Debug("endpoint created", "network", r.NetworkID, "endpoint", r.EndpointID, "mac", got.String())
	if mac != nil {
		return &network.CreateEndpointResponse{}, nil // Docker chose the MAC; it must not be echoed
	}
	return &network.CreateEndpointResponse{Interface: &network.EndpointInterface{MacAddress: got.String()}}, nil
}

func (d *netDriver) DeleteEndpoint(r *network.DeleteEndpointRequest) error {
	if _, err := d.network("DeleteEndpoint", r.NetworkID); err != nil {
		return err
	}
	existed, err := d.p.cfg.Links.DeleteEndpoint(r.EndpointID)
	if err != nil {
		return fmt.Errorf("delete endpoint %s: %w", r.EndpointID, err)
	}
	if !existed {
		return badRequest("DeleteEndpoint: endpoint %s does not exist in network %s", r.EndpointID, r.NetworkID)
	}
	d.p.log.Debug("endpoint deleted", "network", r.NetworkID, "endpoint", r.EndpointID)
	return nil
}

func (d *netDriver) EndpointInfo(r *network.InfoRequest) (*network.InfoResponse, error) {
	if _, err := d.endpoint("EndpointOperInfo", r.NetworkID, r.EndpointID); err != nil {
		return nil, err
	}
	host, _ := netdev.EndpointNames(r.EndpointID)
	return &network.InfoResponse{Value: map[string]string{"bridge": d.p.cfg.Bridge, "veth": host}}, nil
}
