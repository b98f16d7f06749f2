package fastdp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/seedf75a49c6/weave/router"
	"github.com/weaveworks/mesh"
)

// ErrEncryptionRequired is returned by PrepareConnection for an encrypted
// link: this kernel path has no ESP, so such links use sleeve.
var ErrEncryptionRequired = errors.New("encryption required: no kernel ESP, using sleeve")

// Overlay is the VXLAN fast path; it implements router.Overlay. When the
// launch probe failed it stays registered but disabled: every
// PrepareConnection fails with the probe's reason, which the overlay
// switch shows as the link's fallback reason.
type Overlay struct {
	cfg      Config
	log      *slog.Logger
	k        Kernel
	local    mesh.PeerName
	disabled error

	mu struct {
		sync.Mutex
		owners  map[string]*forwarder   // device name -> forwarder owning it
		all     map[*forwarder]struct{} // prepared, not stopped
		stopped bool
	}
	stopOnce sync.Once
}

var _ router.Overlay = (*Overlay)(nil)

// New probes the kernel, removes stale vxw-* devices, isolates the
// router's bridge port and returns the overlay. A failed probe does not
// fail New: the overlay is returned disabled (see Disabled).
func New(cfg Config, local mesh.PeerName) (*Overlay, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &Overlay{cfg: cfg, log: cfg.Logger.With("overlay", OverlayName), k: cfg.Kernel}
	o.local = local
	o.mu.owners = map[string]*forwarder{}
	o.mu.all = map[*forwarder]struct{}{}
	if err := o.setup(); err != nil {
		o.disabled = err
		o.log.Warn("VXLAN fast path disabled; every link will use sleeve", "err", err)
	}
	return o, nil
}

func (o *Overlay) setup() error {
	if err := Cleanup(o.k); err != nil {
		return err
	}
	if err := o.k.Probe(); err != nil {
		return fmt.Errorf("kernel VXLAN unavailable: %w", err)
	}
	if err := o.k.SetIsolated(o.cfg.BridgePort, true); err != nil {
		return fmt.Errorf("isolate router port: %w", err)
	}
	return nil
}

// Cleanup deletes every vxw-* device (and with them their FDB entries):
// for weave reset and for stale devices left by a crash.
func Cleanup(k Kernel) error {
	links, err := k.Links(DevicePrefix)
	if err != nil {
		return fmt.Errorf("clean up vxlan devices: %w", err)
	}
	var errs []error
	for _, l := range links {
		errs = append(errs, k.DelLink(l))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean up vxlan devices: %w", err)
	}
	return nil
}

// Disabled returns why the overlay is disabled, or nil.
func (o *Overlay) Disabled() error { return o.disabled }

// MTU returns the device MTU.
func (o *Overlay) MTU() int { return o.cfg.MTU }

// Name implements router.Overlay.
func (o *Overlay) Name() string { return OverlayName }

// DisplayName implements router.DisplayNamer: "fastdp" in status,
// report and metrics.
func (o *Overlay) DisplayName() string { return DisplayName }

// PrepareConnection implements router.Overlay. It refuses (the switch
// then uses sleeve and shows the error as the fallback reason) when the
// overlay is disabled, the link is encrypted, or the link's underlay
// addresses cannot carry VXLAN (link-local IPv6). IPv4 and IPv6 links
// both use it; each device takes its link's family.
func (o *Overlay) PrepareConnection(p mesh.OverlayConnectionParams) (router.Forwarder, error) {
	if o.disabled != nil {
		return nil, o.disabled
	}
	if p.RemotePeer == nil {
		return nil, errors.New("prepare vxlan connection: no remote peer")
	}
	if p.SessionKey != nil {
		return nil, ErrEncryptionRequired
	}
	if !p.RemotePeer.HasShortID {
		return nil, errors.New("peer has no short ID (protocol version 1)")
	}
	local, remote, err := underlayAddrs(p)
	if err != nil {
		return nil, err
	}
	f := newForwarder(o, p, local, remote)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mu.stopped {
		return nil, errors.New("prepare vxlan connection: overlay stopped")
	}
	o.mu.all[f] = struct{}{}
	return f, nil
}

func underlayAddrs(p mesh.OverlayConnectionParams) (local, remote netip.Addr, err error) {
	if p.LocalAddr == nil || p.RemoteAddr == nil {
		return local, remote, errors.New("no underlay addresses for vxlan")
	}
	l, ok1 := netip.AddrFromSlice(p.LocalAddr.IP)
	r, ok2 := netip.AddrFromSlice(p.RemoteAddr.IP)
	// A dual-stack listener sees IPv4 peers as ::ffff:a.b.c.d.
	l, r = l.Unmap(), r.Unmap()
	switch {
	case !ok1 || !ok2 || !l.IsValid() || !r.IsValid():
		return local, remote, fmt.Errorf("no underlay addresses for vxlan (local %s, remote %s)", p.LocalAddr.IP, p.RemoteAddr.IP)
	case l.Is4() != r.Is4():
		return local, remote, fmt.Errorf("vxlan needs one underlay family (local %s, remote %s)", l, r)
	case l.Is6() && (l.IsLinkLocalUnicast() || r.IsLinkLocalUnicast()):
		// A link-local VXLAN device must be tied to one interface
		// (IFLA_VXLAN_LINK); mesh connections over fe80:: are not
		// something we set up or test.
		return local, remote, fmt.Errorf("vxlan over a link-local IPv6 underlay is not supported (local %s, remote %s)", p.LocalAddr, p.RemoteAddr)
	}
	return l, r, nil
}

// claim makes f the owner of its device; a previous owner (an older
// connection to the same peer) is superseded and will not delete it.
func (o *Overlay) claim(f *forwarder) error {
	o.mu.Lock()
	if o.mu.stopped {
		o.mu.Unlock()
		return errors.New("overlay stopped")
	}
	old := o.mu.owners[f.dev]
	o.mu.owners[f.dev] = f
	o.mu.Unlock()
	if old != nil {
		old.supersede()
	}
	return nil
}

// release forgets f and deletes its device if f still owns it.
func (o *Overlay) release(f *forwarder) {
	o.mu.Lock()
	owner := o.mu.owners[f.dev] == f
	if owner {
		delete(o.mu.owners, f.dev)
	}
	delete(o.mu.all, f)
	o.mu.Unlock()
	if owner {
		if err := o.k.DelLink(f.dev); err != nil {
			o.log.Warn("cannot delete vxlan device", "dev", f.dev, "err", err)
		}
	}
}

// Stop implements router.Overlay: it stops every forwarder, deletes every
// vxw-* device and un-isolates the router port. Idempotent.
func (o *Overlay) Stop() {
	o.stopOnce.Do(func() {
		o.mu.Lock()
		o.mu.stopped = true
		fs := make([]*forwarder, 0, len(o.mu.all))
		for f := range o.mu.all {
			fs = append(fs, f)
		}
		o.mu.Unlock()
		for _, f := range fs {
			f.Stop()
		}
		if o.disabled != nil {
			return
		}
		if err := Cleanup(o.k); err != nil {
			o.log.Warn("cannot remove vxlan devices", "err", err)
		}
		if err := o.k.SetIsolated(o.cfg.BridgePort, false); err != nil {
			o.log.Debug("cannot un-isolate router port", "err", err)
		}
	})
}

// Status is the overlay's diagnostics.
type Status struct {
	Enabled bool
	Reason  string `json:",omitempty"` // why disabled
	MTU     int
	Port    int
	Links   []LinkStatus
}

// LinkStatus describes one connection's VXLAN link.
type LinkStatus struct {
	Peer     string
	Device   string
	VNIRx    uint32
	VNITx    uint32
	Local    string
	Remote   string
	Usable   bool
	Fallback string `json:",omitempty"`
	// RTT is the last heartbeat's round trip: the VXLAN heartbeat out,
	// its ack back over the mesh control connection.
	RTT time.Duration `json:",omitempty"`
}

// Diagnostics implements router.Overlay; it returns a Status.
func (o *Overlay) Diagnostics() any { return o.Status() }

// Status returns the overlay's state, links sorted by device.
func (o *Overlay) Status() Status {
	s := Status{Enabled: o.disabled == nil, MTU: o.cfg.MTU, Port: o.cfg.Port}
	if o.disabled != nil {
		s.Reason = o.disabled.Error()
	}
	o.mu.Lock()
	for _, f := range o.mu.owners {
		s.Links = append(s.Links, f.status())
	}
	o.mu.Unlock()
	sort.Slice(s.Links, func(i, j int) bool { return s.Links[i].Device < s.Links[j].Device })
	return s
}
