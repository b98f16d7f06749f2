package docker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/seedf75a49c6/weave/ipam/address"
)

// Defaults, as Weave Net 2.8.1 uses them.
const (
	DefaultNetSocket   = "/run/docker/plugins/weave.sock"
	DefaultMeshSocket  = "/run/docker/plugins/weavemesh.sock"
	DefaultNetworkName = "weave"     // the Docker network created at launch
	MeshDriverName     = "weavemesh" // driver and IPAM driver of that network
	// MulticastOption is the network option (docker network create -o)
	// that adds a 224.0.0.0/4 route via the container's mesh interface.
	MulticastOption = "works.weave.multicast"
	// ContainerIfPrefix is DstPrefix in Join: Docker names the interface
	// ethwe0, ethwe1, ... in the container.
	ContainerIfPrefix = "ethwe"
	// ExposeIdent owns the bridge addresses that act as Docker gateways.
	ExposeIdent = "weave:expose"
	// defaultCallTimeout bounds an allocation inside one plugin call; it
	// stays under dockerd's own plugin request timeout.
	defaultCallTimeout = 25 * time.Second
)

// Allocator is what the plugin needs from the IPAM ring (*ipam.Allocator
// satisfies it).
type Allocator interface {
	Allocate(ctx context.Context, ident string, subnet address.CIDR) (address.CIDR, error)
	Claim(ctx context.Context, ident string, addr address.CIDR, noErrorOnUnknown bool) error
	Free(ident string, addr address.Address) error
	Owned() (map[string][]address.CIDR, error)
	Universe() address.CIDR
	DefaultSubnet() address.CIDR
}

// Links is the kernel side of endpoints; NetdevLinks is the real one.
type Links interface {
	// CreateEndpoint makes the endpoint's veth pair on bridge and returns
	// the container end's MAC (mac, when set, is that MAC).
	CreateEndpoint(bridge, endpointID string, mac net.HardwareAddr) (net.HardwareAddr, error)
	// DeleteEndpoint removes the pair; existed says if it was there.
	DeleteEndpoint(endpointID string) (existed bool, err error)
	EndpointExists(endpointID string) (bool, error)
	// SandboxIfaces counts the non-loopback interfaces in a sandbox.
	SandboxIfaces(netnsPath string) (int, error)
	// BridgeAddrs lists the bridge's IPv4 addresses.
	BridgeAddrs(bridge string) ([]netip.Prefix, error)
	// Expose adds addr to the bridge with its NAT rules (weave expose).
	Expose(bridge string, addr netip.Prefix) error
}

// Config configures the plugin. Zero fields take the defaults above.
type Config struct {
	Bridge     string // weave bridge, default "weave"
	NetSocket  string // weave.sock path; default DefaultNetSocket
	MeshSocket string // weavemesh.sock path; default DefaultMeshSocket
	// V2 serves one socket, NetSocket, with the global-scope network
	// driver and the IPAM driver, as a Docker v2 managed plugin does for a
	// swarm (2.8.1's --plugin-v2); MeshSocket is not served.
	V2 bool
	// StateFile keeps the networks Docker created (their options and
	// pools) across router restarts: dockerd does not send them again.
	StateFile string
	// IPAM is the ring; nil serves no IpamDriver (--ipalloc-range "").
	IPAM        Allocator
	Links       Links // default NetdevLinks
	Logger      *slog.Logger
	CallTimeout time.Duration // bound on one call's allocation; default 25 s
}

func (c Config) withDefaults() Config {
	if c.Bridge == "" {
		c.Bridge = "weave"
	}
	if c.NetSocket == "" {
		c.NetSocket = DefaultNetSocket
	}
	if c.MeshSocket == "" {
		c.MeshSocket = DefaultMeshSocket
	}
	if c.Links == nil {
		c.Links = NetdevLinks{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = defaultCallTimeout
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.StateFile == "":
		return errors.New("docker plugin: StateFile must be set")
	case !c.V2 && c.NetSocket == c.MeshSocket:
		return errors.New("docker plugin: --plugin-socket and --plugin-mesh-socket must differ")
	}
	return nil
}
