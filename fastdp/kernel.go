package fastdp

import (
	"fmt"
	"net/netip"
	"strings"
)

// Kernel is the narrow set of kernel operations the fast path needs. The
// Linux implementation (NewKernel) uses netlink and AF_PACKET; tests use a
// recording fake. Every method acts in the caller's network namespace.
type Kernel interface {
	// Probe checks that VXLAN devices can be created (by creating and
	// deleting a throwaway one).
	Probe() error
	// AddVXLAN creates a VXLAN device, enslaves it to its bridge and sets
	// it up.
	AddVXLAN(spec VXLANSpec) error
	// SetPort sets the bridge port flags of dev.
	SetPort(dev string, flags PortFlags) error
	// SetIsolated sets only the isolated flag of bridge port dev.
	SetIsolated(dev string, on bool) error
	// AppendFDB adds a forwarding entry to a VXLAN device's own FDB.
	AppendFDB(e FDBEntry) error
	// DelLink deletes a link; a missing link is not an error.
	DelLink(dev string) error
	// Links lists the names of links starting with prefix.
	Links(prefix string) ([]string, error)
	// OpenPacket opens an AF_PACKET socket on dev that reads only frames
	// with an all-zero source MAC (heartbeats) and writes whole frames.
	OpenPacket(dev string) (PacketConn, error)
}

// PacketConn reads and writes whole Ethernet frames on one device.
type PacketConn interface {
	ReadFrame(buf []byte) (int, error)
	WriteFrame(frame []byte) error
	Close() error
}

// VXLANSpec describes one per-peer VXLAN device.
type VXLANSpec struct {
	Name   string
	Bridge string     // master bridge
	VNI    uint32     // receive VNI (what the peer sends us)
	Local  netip.Addr // our underlay address: IPv4, or IPv6 for an IPv6 link
	Port   int        // UDP destination port
	MTU    int
}

// String renders the spec as the equivalent ip(8) command. Over IPv6 there
// is no DF bit: IPv6 routers never fragment, and the sending kernel drops
// (does not fragment) an encapsulated packet above the path MTU, so the
// full-size heartbeat is still the MTU check (docs/fastdp.md). The UDP
// checksum stays on over IPv6: zero UDP checksums need both ends to opt
// in, and middleboxes drop them.
func (s VXLANSpec) String() string {
	if s.Local.Is6() {
		return fmt.Sprintf("link add %s type vxlan id %d local %s dstport %d nolearning ttl 64 udpcsum mtu %d master %s up",
			s.Name, s.VNI, s.Local, s.Port, s.MTU, s.Bridge)
	}
	return fmt.Sprintf("link add %s type vxlan id %d local %s dstport %d nolearning ttl 64 df set noudpcsum mtu %d master %s up",
		s.Name, s.VNI, s.Local, s.Port, s.MTU, s.Bridge)
}

// PortFlags are bridge port flags of a vxw port.
type PortFlags struct {
	Isolated   bool
	Learning   bool
	Flood      bool // unknown unicast flooding
	McastFlood bool
	BcastFlood bool
	Flush      bool // flush the dynamic FDB entries learned on the port
}

func (p PortFlags) render(dev string) string {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	s := fmt.Sprintf("brport %s isolated %s learning %s flood %s mcast_flood %s bcast_flood %s",
		dev, onOff(p.Isolated), onOff(p.Learning), onOff(p.Flood), onOff(p.McastFlood), onOff(p.BcastFlood))
	if p.Flush {
		s += " flush"
	}
	return s
}

// FDBEntry is a static entry in a VXLAN device's FDB.
type FDBEntry struct {
	Dev string
	MAC [6]byte
	Dst netip.Addr
	VNI uint32
}

func (e FDBEntry) String() string {
	m := make([]string, 6)
	for i, b := range e.MAC {
		m[i] = fmt.Sprintf("%02x", b)
	}
	return fmt.Sprintf("fdb append %s dev %s dst %s vni %d self permanent", strings.Join(m, ":"), e.Dev, e.Dst, e.VNI)
}
