package fastdp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/weaveworks/mesh"
)

// Defaults for Config fields left zero.
const (
	// OverlayName is the name advertised in the Overlays feature. Not
	// "fastdp": Weave's fastdp accepts any source VNI through ODP, ours
	// only the VNIs of direct peers, so mixed links must pick sleeve.
	OverlayName = "vxlan"
	// DisplayName is what people and dashboards see for this path: the
	// connection's overlay in `weave status connections`, the type label of
	// weave_connections and the report's OverlayDiagnostics key, as Weave
	// names its fast datapath. Negotiation never uses it (docs/fastdp.md).
	DisplayName = "fastdp"
	// DefaultPort is the VXLAN UDP port (mesh port 6783 + 1).
	DefaultPort = 6784
	// DefaultBridge is the bridge the vxw devices join.
	DefaultBridge = "weave"
	// DefaultBridgePort is the router's capture port on the bridge, made
	// isolated so router-injected frames never leave through VXLAN.
	DefaultBridgePort = "vethwe-bridge"
	// Overhead is what VXLAN over IPv4 adds to a container frame's IP
	// packet: outer IP 20 + UDP 8 + VXLAN 8 + inner Ethernet 14.
	Overhead = 50
	// Overhead6 is the same over an IPv6 underlay: the outer IPv6
	// header is 40 bytes, so 70 in all.
	Overhead6 = 70
	// DefaultMTU is the device MTU when Config.MTU is 0 (1500 - Overhead).
	DefaultMTU = 1500 - Overhead
	// DevicePrefix starts the name of every device this package creates.
	DevicePrefix = "vxw-"
	// DefaultHeartbeatInterval is the heartbeat period once verified.
	DefaultHeartbeatInterval = time.Second
	// DefaultFastHeartbeat is the heartbeat period until the first ack.
	DefaultFastHeartbeat = 200 * time.Millisecond
)

// Config configures the VXLAN overlay. Zero fields take the defaults.
type Config struct {
	Bridge     string // default "weave"
	BridgePort string // router capture port on the bridge; default "vethwe-bridge"
	Port       int    // VXLAN UDP port; default 6784
	MTU        int    // device (= bridge, container) MTU; default 1450 (also on IPv6 links: see OverheadFor)
	// LocalShortID returns our current mesh short ID (required).
	LocalShortID func() mesh.PeerShortID
	Logger       *slog.Logger // default: discard
	Kernel       Kernel       // default NewKernel()
	// HeartbeatInterval is the heartbeat period once acked (default 1 s).
	HeartbeatInterval time.Duration
	// FastHeartbeat is the period until the first ack (default 200 ms).
	FastHeartbeat time.Duration
	// HeartbeatTimeout puts a link on hold when no heartbeat or ack
	// arrived for this long; default 3 x HeartbeatInterval.
	HeartbeatTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.Bridge == "" {
		c.Bridge = DefaultBridge
	}
	if c.BridgePort == "" {
		c.BridgePort = DefaultBridgePort
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Kernel == nil {
		c.Kernel = NewKernel()
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.FastHeartbeat <= 0 {
		c.FastHeartbeat = DefaultFastHeartbeat
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = 3 * c.HeartbeatInterval
	}
	return c
}

// Validate checks a defaulted Config.
func (c Config) Validate() error {
	if c.LocalShortID == nil {
		return errors.New("fastdp config: LocalShortID is required")
	}
	if c.MTU < minMTU || c.MTU > 65535-Overhead {
		return fmt.Errorf("fastdp config: MTU %d out of range %d..%d", c.MTU, minMTU, 65535-Overhead)
	}
	if c.Port <= 0 || c.Port > 65535 {
		return fmt.Errorf("fastdp config: port %d out of range", c.Port)
	}
	return nil
}

// OverheadFor is what VXLAN adds over an underlay address's family:
// Overhead (50) for IPv4, Overhead6 (70) for IPv6.
func OverheadFor(addr netip.Addr) int {
	if addr.Unmap().Is6() {
		return Overhead6
	}
	return Overhead
}

// minMTU is the smallest device MTU we accept (IPv4 minimum reassembly
// size).
const minMTU = 576
