package docker

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/docker/go-plugins-helpers/ipam"
	"github.com/docker/go-plugins-helpers/network"
)

const pool12 = "weave-10.32.0.0/12-10.32.0.0/12"

// TestDockerCallSequence replays the calls dockerd 20.10 makes for
// `docker network create -d weavemesh --ipam-driver weavemesh`, `docker run`
// and `docker rm`, in its order, and checks each answer and its effect.
func TestDockerCallSequence(t *testing.T) {
	h := newHarness(t)
	poolID, gw := h.networkCreateCalls()
	ip := h.runCalls(poolID, gw)
	h.rmCalls(poolID, ip)
	// docker network rm
	h.mesh("NetworkDriver.DeleteNetwork", network.DeleteNetworkRequest{NetworkID: "net1"}, nil)
	h.mesh("IpamDriver.ReleaseAddress", ipam.ReleaseAddressRequest{PoolID: poolID, Address: netip.MustParsePrefix(gw).Addr().String()}, nil)
	h.mesh("IpamDriver.ReleasePool", ipam.ReleasePoolRequest{PoolID: poolID}, nil)
	if len(h.links.bridge) != 1 {
		t.Errorf("the host's gateway address was removed on network rm: %v", h.links.bridge)
	}
}

// networkCreateCalls: address spaces, default pool, gateway (the host gets
// exposed there), CreateNetwork. It returns the pool ID and gateway CIDR.
func (h *harness) networkCreateCalls() (poolID, gw string) {
	h.t.Helper()
	var spaces ipam.AddressSpacesResponse
	h.mesh("IpamDriver.GetDefaultAddressSpaces", nil, &spaces)
	if spaces.LocalDefaultAddressSpace != "weavelocal" || spaces.GlobalDefaultAddressSpace != "weaveglobal" {
		h.t.Fatalf("address spaces %+v", spaces)
	}
	var pool ipam.RequestPoolResponse
	h.mesh("IpamDriver.RequestPool", ipam.RequestPoolRequest{AddressSpace: "weavelocal"}, &pool)
	if pool.PoolID != pool12 || pool.Pool != "10.32.0.0/12" {
		h.t.Fatalf("default pool %+v", pool)
	}
	gw = h.requestAddress(pool.PoolID, "", map[string]string{"RequestAddressType": "com.docker.network.gateway"})
	if h.alloc.idents()[ExposeIdent] == nil || len(h.links.bridge) != 1 || h.links.bridge[0].String() != gw {
		h.t.Fatalf("gateway %s: bridge now has %v, IPAM %v; want the host exposed at the gateway", gw, h.links.bridge, h.alloc.idents())
	}
	h.createNetwork("net1", true)
	return pool.PoolID, gw
}

// runCalls: RequestAddress, CreateEndpoint, Join, external connectivity,
// EndpointOperInfo. It returns the container's address.
func (h *harness) runCalls(poolID, gw string) string {
	h.t.Helper()
	addr := h.requestAddress(poolID, "", nil)
	ip := netip.MustParsePrefix(addr).Addr().String()
	if got := h.alloc.idents()[ip]; len(got) != 1 {
		h.t.Fatalf("container address %s not filed under itself: %v", addr, h.alloc.idents())
	}
	var ep network.CreateEndpointResponse
	h.mesh("NetworkDriver.CreateEndpoint", network.CreateEndpointRequest{
		NetworkID: "net1", EndpointID: "0123456789abcdef", Interface: &network.EndpointInterface{Address: addr},
	}, &ep)
	if ep.Interface == nil || ep.Interface.MacAddress != h.links.endpoints["0123456789abcdef"].String() {
		h.t.Fatalf("CreateEndpoint answered %+v; want the veth's MAC", ep.Interface)
	}
	var join network.JoinResponse
	h.mesh("NetworkDriver.Join", network.JoinRequest{NetworkID: "net1", EndpointID: "0123456789abcdef", SandboxKey: "/var/run/docker/netns/x"}, &join)
	want := network.JoinResponse{
		InterfaceName:         network.InterfaceName{SrcName: "vethwg012345678", DstPrefix: "ethwe"},
		Gateway:               netip.MustParsePrefix(gw).Addr().String(),
		StaticRoutes:          []*network.StaticRoute{{Destination: "224.0.0.0/4", RouteType: 1}},
		DisableGatewayService: true,
	}
	if !reflect.DeepEqual(join, want) {
		h.t.Fatalf("Join answered %+v, want %+v", join, want)
	}
	h.mesh("NetworkDriver.ProgramExternalConnectivity", network.ProgramExternalConnectivityRequest{NetworkID: "net1", EndpointID: "0123456789abcdef"}, nil)
	var info network.InfoResponse
	h.mesh("NetworkDriver.EndpointOperInfo", network.InfoRequest{NetworkID: "net1", EndpointID: "0123456789abcdef"}, &info)
	return ip
}

// rmCalls: docker rm's RevokeExternalConnectivity, Leave, DeleteEndpoint
// (the veth goes) and ReleaseAddress (the address goes).
func (h *harness) rmCalls(poolID, ip string) {
	h.t.Helper()
	h.mesh("NetworkDriver.RevokeExternalConnectivity", network.RevokeExternalConnectivityRequest{NetworkID: "net1", EndpointID: "0123456789abcdef"}, nil)
	h.mesh("NetworkDriver.Leave", network.LeaveRequest{NetworkID: "net1", EndpointID: "0123456789abcdef"}, nil)
	h.mesh("NetworkDriver.DeleteEndpoint", network.DeleteEndpointRequest{NetworkID: "net1", EndpointID: "0123456789abcdef"}, nil)
	if len(h.links.endpoints) != 0 {
		h.t.Fatalf("veth left after DeleteEndpoint: %v", h.links.endpoints)
	}
	h.mesh("IpamDriver.ReleaseAddress", ipam.ReleaseAddressRequest{PoolID: poolID, Address: ip}, nil)
	if _, ok := h.alloc.idents()[ip]; ok {
		h.t.Fatalf("ReleaseAddress left %s allocated", ip)
	}
}

func (h *harness) requestAddress(poolID, addr string, opts map[string]string) string {
	h.t.Helper()
	var r ipam.RequestAddressResponse
	h.mesh("IpamDriver.RequestAddress", ipam.RequestAddressRequest{PoolID: poolID, Address: addr, Options: opts}, &r)
	if _, err := netip.ParsePrefix(r.Address); err != nil {
		h.t.Fatalf("RequestAddress answered %q: %v", r.Address, err)
	}
	return r.Address
}

// TestJoinBesideAnotherNetwork: a container that already has an interface
// keeps its default route there; ethwe gets no gateway and no gwbridge.
func TestJoinBesideAnotherNetwork(t *testing.T) {
	h := newHarness(t)
	h.createNetwork("net1", false)
	h.requestAddress(pool12, "", map[string]string{"RequestAddressType": "com.docker.network.gateway"})
	h.links.sandbox["/sb"] = 1
	h.mesh("NetworkDriver.CreateEndpoint", network.CreateEndpointRequest{NetworkID: "net1", EndpointID: "e1"}, nil)
	var join network.JoinResponse
	h.mesh("NetworkDriver.Join", network.JoinRequest{NetworkID: "net1", EndpointID: "e1", SandboxKey: "/sb"}, &join)
	if join.Gateway != "" || !join.DisableGatewayService || join.StaticRoutes != nil {
		t.Fatalf("Join beside another network: %+v; want no gateway, no gwbridge, no multicast route", join)
	}
}

// TestJoinWithoutHostAddress: a weavemesh network on Docker's own IPAM has
// no bridge address in its subnet: Docker adds docker_gwbridge for the way out.
func TestJoinWithoutHostAddress(t *testing.T) {
	h := newHarness(t)
	h.createNetwork("net1", false)
	h.mesh("NetworkDriver.CreateEndpoint", network.CreateEndpointRequest{NetworkID: "net1", EndpointID: "e1"}, nil)
	var join network.JoinResponse
	h.mesh("NetworkDriver.Join", network.JoinRequest{NetworkID: "net1", EndpointID: "e1", SandboxKey: "/sb"}, &join)
	if join.Gateway != "" || join.DisableGatewayService {
		t.Fatalf("Join with no host address in the subnet: %+v; want Docker's gateway service", join)
	}
}

// TestUserSubnetAndStaticAddress: --subnet inside the range with --ip-range,
// --ip and a Docker-chosen MAC.
func TestUserSubnetAndStaticAddress(t *testing.T) {
	h := newHarness(t)
	var pool ipam.RequestPoolResponse
	h.mesh("IpamDriver.RequestPool", ipam.RequestPoolRequest{Pool: "10.40.1.0/24", SubPool: "10.40.1.128/25"}, &pool)
	if pool.PoolID != "weave-10.40.1.0/24-10.40.1.128/25" || pool.Pool != "10.40.1.0/24" {
		t.Fatalf("pool %+v", pool)
	}
	if a := h.requestAddress(pool.PoolID, "", nil); !netip.MustParsePrefix("10.40.1.128/25").Contains(netip.MustParsePrefix(a).Addr()) || netip.MustParsePrefix(a).Bits() != 24 {
		t.Fatalf("address %s: want one in --ip-range 10.40.1.128/25 with the subnet's /24", a)
	}
	if a := h.requestAddress(pool.PoolID, "10.40.1.9", nil); a != "10.40.1.9/24" {
		t.Fatalf("--ip 10.40.1.9 gave %s", a)
	}
	if err := h.fails("IpamDriver.RequestAddress", `{"PoolID":"weave-10.40.1.0/24-10.40.1.128/25","Address":"10.40.1.9"}`); err == "" {
		t.Fatal("second claim of 10.40.1.9 succeeded")
	}
	h.createNetwork("net2", false)
	var ep network.CreateEndpointResponse
	h.mesh("NetworkDriver.CreateEndpoint", network.CreateEndpointRequest{NetworkID: "net2", EndpointID: "e2",
		Interface: &network.EndpointInterface{MacAddress: "02:42:0a:28:01:09"}}, &ep)
	if ep.Interface != nil || h.links.endpoints["e2"].String() != "02:42:0a:28:01:09" {
		t.Fatalf("Docker's MAC: answer %+v, veth %s", ep.Interface, h.links.endpoints["e2"])
	}
}

// TestRestartKeepsNetworks: a new Plugin on the same state file serves
// Join and DeleteEndpoint for a network created before the restart.
func TestRestartKeepsNetworks(t *testing.T) {
	h := newHarness(t)
	h.createNetwork("net1", true)
	h.mesh("NetworkDriver.CreateEndpoint", network.CreateEndpointRequest{NetworkID: "net1", EndpointID: "e1"}, nil)
	h.p.Close()
	h.start()
	var join network.JoinResponse
	h.mesh("NetworkDriver.Join", network.JoinRequest{NetworkID: "net1", EndpointID: "e1", SandboxKey: "/sb"}, &join)
	if len(join.StaticRoutes) != 1 {
		t.Fatalf("multicast option lost across restart: %+v", join)
	}
	h.mesh("NetworkDriver.DeleteEndpoint", network.DeleteEndpointRequest{NetworkID: "net1", EndpointID: "e1"}, nil)
}
