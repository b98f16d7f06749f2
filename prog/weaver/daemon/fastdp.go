package daemon

import (
	"sync/atomic"

	wmesh "github.com/weaveworks/mesh"

	"github.com/seedf75a49c6/weave/fastdp"
	"github.com/seedf75a49c6/weave/router"
)

// bridgeMTU is --mtu, else (fast path usable) the VXLAN MTU, else the
// sleeve-mode 65535. With a password and no trusted subnets every link is
// encrypted, and encrypted links never use the kernel path (no ESP), so the
// jumbo sleeve MTU serves them better than the VXLAN one would.
func (d *daemon) bridgeMTU() int {
	if d.cfg.MTU != 0 || d.cfg.NoFastDP {
		return d.cfg.BridgeMTU()
	}
	if d.cfg.Password != "" && len(d.cfg.TrustedSubnets) == 0 {
		d.log.Info("bridge MTU for sleeve: every link is encrypted, so none can use the VXLAN path", "mtu", d.cfg.BridgeMTU())
		return d.cfg.BridgeMTU()
	}
	return d.vxlanMTU()
}

// vxlanMTU is the MTU of the fast path's devices: --mtu, else the underlay
// MTU minus the VXLAN overhead of the underlay's family (50 over IPv4, 70
// over IPv6: an IPv6 --host, or a host with no IPv4 address).
func (d *daemon) vxlanMTU() int {
	if d.cfg.MTU != 0 {
		return d.cfg.MTU
	}
	u := fastdp.DetectUnderlay(d.cfg.Host)
	family := "ipv4"
	if u.IPv6 {
		family = "ipv6"
	}
	d.log.Info("VXLAN MTU from the underlay", "iface", u.Iface, "family", family, "underlay_mtu", u.MTU, "mtu", u.OverlayMTU())
	return u.OverlayMTU()
}

// meshRef lets the fast path read our short ID from the mesh router,
// which is built after the overlays.
type meshRef struct{ r atomic.Pointer[wmesh.Router] }

func (m *meshRef) shortID() wmesh.PeerShortID {
	r := m.r.Load()
	if r == nil {
		return 0
	}
	r.Ourself.RLock()
	defer r.Ourself.RUnlock()
	return r.Ourself.ShortID
}

// fastPath builds the VXLAN overlay unless --no-fastdp; it goes first in
// the overlay list so links prefer it.
func (d *daemon) fastPath(name wmesh.PeerName, ref *meshRef) []router.Overlay {
	if d.cfg.NoFastDP {
		d.log.Info("fast datapath disabled (--no-fastdp); using sleeve only")
		return nil
	}
	fd, err := fastdp.New(fastdp.Config{
		Bridge: d.cfg.Bridge, Port: d.cfg.Port + 1, MTU: d.vxlanMTU(), LocalShortID: ref.shortID,
		Logger: d.log.With("component", "fastdp"),
	}, name)
	if err != nil {
		d.log.Warn("fast datapath unavailable; using sleeve only", "err", err)
		return nil
	}
	d.onStop(fd.Stop)
	if fd.Disabled() == nil {
		// The encapsulated flow needs no conntrack state; tracking it costs
		// every packet a lookup (docs/performance.md).
		if err := d.firewall.NoTrackUDP(d.cfg.Port + 1); err != nil {
			d.log.Warn("cannot exempt the fast path's UDP from conntrack", "port", d.cfg.Port+1, "err", err)
		}
	}
	if fd.Disabled() == nil && d.cfg.Password != "" {
		d.log.Info("password set: encrypted links use sleeve (no kernel ESP); trusted links may use vxlan")
	}
	return []router.Overlay{fd}
}
