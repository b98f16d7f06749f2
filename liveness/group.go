package liveness

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// Group is the failure detection of a router: one Detector per underlay
// family it has an address of. memberlist assumes every member can probe
// every other, which a mesh of IPv4-only and IPv6-only hosts cannot give:
// so each family has a membership of its own, joined only at addresses of
// that family, and a dual-stack router is a member of both. A peer's
// verdict combines the detectors it is a member of: alive while any says
// alive, suspect while none says alive and one says suspect, dead only
// when every one it is a member of says dead. A peer we share no family
// with gets no verdict from us (Unknown): mesh's own timeouts apply.
//
// With one family (every router but a dual-stack one without --host)
// the group is that one detector, and every method is the detector's.
type Group struct {
	dets []*Detector
	cfg  Config

	deliver sync.Mutex // serialises OnChange across the detectors
	mu      sync.Mutex
	table   statusTable // the combined verdicts (more than one detector)
}

// NewGroup starts the detectors of cfg: one, as New does, unless
// cfg.AdvertiseAddr6 is set too. Then cfg.AdvertiseAddr must be IPv4 and
// AdvertiseAddr6 IPv6, and both detectors share one UDP+TCP socket pair
// on cfg.BindAddr ("::" when empty; it takes both families) and cfg.Port:
// one port for both families, each packet handed to the detector of its
// sender's family.
func NewGroup(cfg Config) (*Group, error) {
	if cfg.AdvertiseAddr6 == "" {
		d, err := New(cfg)
		if err != nil {
			return nil, err
		}
		return &Group{dets: []*Detector{d}, cfg: d.cfg}, nil
	}
	a4, err4 := netip.ParseAddr(cfg.AdvertiseAddr)
	a6, err6 := netip.ParseAddr(cfg.AdvertiseAddr6)
	if err4 != nil || err6 != nil || !a4.Unmap().Is4() || a6.Is4() || a6.Is4In6() {
		return nil, fmt.Errorf("liveness: advertised addresses %q and %q are not an IPv4 and an IPv6 address", cfg.AdvertiseAddr, cfg.AdvertiseAddr6)
	}
	if cfg.BindAddr == "" {
		cfg.BindAddr = "::"
	}
	cfg.fill()
	g := &Group{cfg: cfg, table: newStatusTable()}
	onChange := cfg.OnChange
	dt, err := newDualTransport(&cfg)
	if err != nil {
		return nil, fmt.Errorf("start liveness: %w", err)
	}
	g.deliver.Lock() // the first detector's changes wait for g.dets
	for i, adv := range []string{cfg.AdvertiseAddr, cfg.AdvertiseAddr6} {
		c := cfg
		c.AdvertiseAddr, c.AdvertiseAddr6, c.tr = adv, "", dt.fam[i]
		c.Logger = cfg.Logger.With("family", []string{"IPv4", "IPv6"}[i])
		c.OnChange = func(ch Change) { g.update(ch, onChange) }
		d, err := New(c)
		if err != nil {
			g.deliver.Unlock()
			_ = g.Close()
			_ = dt.fam[i].Shutdown()
			if i == 0 {
				_ = dt.fam[1].Shutdown()
			}
			return nil, err
		}
		g.dets = append(g.dets, d)
	}
	g.deliver.Unlock()
	return g, nil
}

// combined is peer's verdict over every detector it is a member of.
func (g *Group) combined(peer string) State {
	seen := Unknown
	for _, d := range g.dets {
		if d.stopped() { // its last view is stale
			continue
		}
		switch d.Get(peer).State {
		case Alive:
			return Alive
		case Suspect:
			seen = Suspect
		case Dead:
			if seen == Unknown {
				seen = Dead
			}
		}
	}
	return seen
}

// update records the combined state of ch.Peer after one detector's
// transition ch, and reports the group's transition, if any, to onChange.
func (g *Group) update(ch Change, onChange func(Change)) {
	g.deliver.Lock()
	defer g.deliver.Unlock()
	st := g.combined(ch.Peer)
	g.mu.Lock()
	old, changed := g.table.set(ch.Peer, st, ch.At)
	if changed {
		g.table.notify()
	}
	g.mu.Unlock()
	if !changed {
		return
	}
	g.cfg.Logger.Info("peer liveness verdict changed", "component", "liveness", "peer", ch.Peer,
		"from", old.State.String(), "to", st.String())
	if onChange != nil {
		onChange(Change{Peer: ch.Peer, From: old.State, To: st, At: ch.At})
	}
}

// Detectors returns the group's detectors: the IPv4 one first.
func (g *Group) Detectors() []*Detector { return slices.Clone(g.dets) }

func (g *Group) one() *Detector {
	if len(g.dets) == 1 {
		return g.dets[0]
	}
	return nil
}

// Name returns our peer name.
func (g *Group) Name() string { return g.cfg.Name }

// Port returns the port we listen on and join seeds at (both families).
func (g *Group) Port() int { return g.cfg.Port }

// Get returns peer's combined status; State is Unknown for a peer no
// detector of ours has seen.
func (g *Group) Get(peer string) Status {
	if d := g.one(); d != nil {
		return d.Get(peer)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.table.get(peer)
}

// Peers returns every peer ever seen (not us), sorted by name.
func (g *Group) Peers() []Status {
	if d := g.one(); d != nil {
		return d.Peers()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.table.list()
}

// Transitions returns how many times a peer entered state s (combined).
func (g *Group) Transitions(s State) uint64 {
	if d := g.one(); d != nil {
		return d.Transitions(s)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.table.transitions(s)
}

// RTT returns the smoothed round trip of our probes to peer: the first
// detector's (IPv4 before IPv6) that has one.
func (g *Group) RTT(peer string) (time.Duration, bool) {
	for _, d := range g.dets {
		if rtt, ok := d.RTT(peer); ok {
			return rtt, true
		}
	}
	return 0, false
}

// PacketBytesSent sums the UDP bytes every detector sent.
func (g *Group) PacketBytesSent() uint64 {
	var n uint64
	for _, d := range g.dets {
		n += d.PacketBytesSent()
	}
	return n
}

// Await blocks until peer's combined state is s or ctx ends.
func (g *Group) Await(ctx context.Context, peer string, s State) error {
	if d := g.one(); d != nil {
		return d.Await(ctx, peer, s)
	}
	return await(ctx, peer, s, func() (State, chan struct{}) {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.table.get(peer).State, g.table.changed
	})
}

// Close leaves every membership and stops. Idempotent.
func (g *Group) Close() error {
	var errs []error
	for _, d := range g.dets {
		errs = append(errs, d.Close())
	}
	return errors.Join(errs...)
}

// Kill stops every detector without leaving (see Detector.Kill).
func (g *Group) Kill() error {
	var errs []error
	for _, d := range g.dets {
		errs = append(errs, d.Kill())
	}
	return errors.Join(errs...)
}
