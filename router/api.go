package router

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weaveworks/mesh"
)

// Default values for Config fields left zero.
const (
	// DefaultMACMaxAge is how long a MAC cache entry lives without traffic
	// (Weave's macMaxAge).
	DefaultMACMaxAge = 10 * time.Minute
	// DefaultMACMoveGrace is how long after a MAC was last seen behind a
	// remote peer a frame captured locally from that MAC is still treated
	// as a loop (dropped) rather than as the container having moved here.
	DefaultMACMoveGrace = 2 * time.Second
	// DefaultBusyPoll is how long the capture loop and an overlay's receive
	// loop keep polling both sockets after their last frame before they
	// sleep (see BusyPoller). A ping round trip on an idle router otherwise
	// pays a cold thread wake-up per hop (docs/performance.md, "Latency").
	DefaultBusyPoll = 200 * time.Microsecond
)

// Config configures a NetworkRouter. Zero fields take the documented
// defaults.
type Config struct {
	Logger       *slog.Logger  // default: a logger that discards everything
	MACMaxAge    time.Duration // MAC cache entry lifetime; default 10 min (Weave's macMaxAge)
	MACMoveGrace time.Duration // loop-protection window, see macCache; default 2 s
	PktDebug     bool          // log every frame decision at debug level
	// BusyPoll is the busy-poll window of the capture and overlay receive
	// loops (see BusyPoller); default DefaultBusyPoll; negative: off. An
	// idle router spends at most about twice this much CPU per frame burst.
	BusyPoll time.Duration

	// Now is the clock; default time.Now. Tests inject a fake.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MACMaxAge <= 0 {
		c.MACMaxAge = DefaultMACMaxAge
	}
	if c.MACMoveGrace <= 0 {
		c.MACMoveGrace = DefaultMACMoveGrace
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.BusyPoll == 0 {
		c.BusyPoll = DefaultBusyPoll
	}
	return c
}

// NetworkRouter is the L2 switch between the local bridge and the overlays:
// MAC learning, unicast along mesh unicast routes, broadcast along mesh
// broadcast routes, relaying for multi-hop.
type NetworkRouter struct {
	cfg Config
	log *slog.Logger
	sw  *OverlaySwitch
	mac *macCache

	pollers  []BusyPoller  // overlays with their own receive loop
	batchers []Batcher     // overlays that can hold sends back for a batch
	sources  []BatchSource // overlays whose receive loop frames bursts

	dead   atomic.Pointer[deadSet] // peers liveness declared dead (dead_peers.go)
	deadMu sync.Mutex              // serialises SetPeerDead

	// bound is set once by Start; the hot path loads it without locking.
	bound atomic.Pointer[binding]

	lifecycle struct {
		sync.Mutex
		started bool
		stopped bool
		stop    chan struct{}
		wg      sync.WaitGroup
	}
}

// NewNetworkRouter builds a router over the given overlays, in preference
// order (e.g. fastdp, sleeve).
func NewNetworkRouter(cfg Config, overlays ...Overlay) *NetworkRouter {
	cfg = cfg.withDefaults()
	r := &NetworkRouter{
		cfg: cfg,
		log: cfg.Logger,
		sw:  NewOverlaySwitch(cfg.Logger, overlays...),
		mac: newMACCache(cfg.MACMaxAge, cfg.MACMoveGrace, cfg.Now),
	}
	r.lifecycle.stop = make(chan struct{})
	r.dead.Store(&deadSet{})
	for _, o := range overlays {
		if p, ok := o.(BusyPoller); ok {
			r.pollers = append(r.pollers, p)
		}
		if b, ok := o.(Batcher); ok {
			r.batchers = append(r.batchers, b)
		}
		if s, ok := o.(BatchSource); ok {
			r.sources = append(r.sources, s)
		}
	}
	return r
}

// MeshOverlay is the mesh.Overlay (the overlay switch) to pass to
// mesh.NewRouter.
func (r *NetworkRouter) MeshOverlay() mesh.Overlay { return r.sw }

// Switch returns the overlay switch (the same object as MeshOverlay).
func (r *NetworkRouter) Switch() *OverlaySwitch { return r.sw }

// Start binds the router to the mesh (routes, peers) and the bridge
// injector, and starts MAC cache expiry. Call after mesh.NewRouter and
// before mesh.Router.Start. Calling it twice is a no-op.
func (r *NetworkRouter) Start(m *mesh.Router, inj Injector) {
	r.lifecycle.Lock()
	defer r.lifecycle.Unlock()
	if r.lifecycle.started || r.lifecycle.stopped {
		return
	}
	r.lifecycle.started = true
	r.bound.Store(&binding{mesh: m, routes: m.Routes, ourself: m.Ourself.Name, inj: inj})
	m.Peers.OnGC(r.peerGone)
	r.wireBusyPoll(inj)
	r.wireBatch(inj)
	r.lifecycle.wg.Add(1)
	go r.expireLoop(r.lifecycle.stop)
}

// BusyPoller is a receive loop that can busy-poll: the capture socket
// (the Injector) and overlays with a socket of their own (sleeve). Start
// pairs the Injector with each overlay: after the capture loop forwards a
// frame it polls the overlay for the reply, and after an overlay injects
// one it polls the capture socket, for up to Config.BusyPoll each.
type BusyPoller interface {
	// PollOnce handles one waiting frame on the caller's goroutine, if any
	// and if the loop is not busy; it never blocks.
	PollOnce() bool
	// SetBusyPoll sets the window (<= 0: off), the peer to poll, and the
	// token that lets only one loop of a pair spin at a time.
	SetBusyPoll(d time.Duration, peer func() bool, tok *atomic.Bool)
}

func (r *NetworkRouter) wireBusyPoll(inj Injector) {
	c, ok := inj.(BusyPoller)
	if !ok || len(r.pollers) == 0 || r.cfg.BusyPoll < 0 {
		return
	}
	tok := new(atomic.Bool)
	for _, p := range r.pollers {
		p.SetBusyPoll(r.cfg.BusyPoll, c.PollOnce, tok)
	}
	if len(r.pollers) == 1 {
		c.SetBusyPoll(r.cfg.BusyPoll, r.pollers[0].PollOnce, tok)
		return
	}
	ps := r.pollers
	c.SetBusyPoll(r.cfg.BusyPoll, func() bool {
		did := false
		for _, p := range ps {
			did = p.PollOnce() || did
		}
		return did
	}, tok)
}

// Batcher is an overlay or an Injector that can hold back what it sends
// while a batch is open and send it together when the batch ends (sleeve:
// runs of datagrams as one UDP GSO send; the capture socket: injects as one
// sendmmsg).
type Batcher interface {
	BeginBatch()
	EndBatch()
}

// BatchSource is an Injector or an overlay whose receive loop handles
// frames in bursts and says where each starts and ends (the capture
// socket, the sleeve's UDP receive loop).
type BatchSource interface {
	SetBatch(begin, end func())
}

// wireBatch makes each burst of captured frames a batch of every Batcher
// overlay, and each burst an overlay receives a batch of the injector's.
func (r *NetworkRouter) wireBatch(inj Injector) {
	if b, ok := inj.(Batcher); ok {
		for _, s := range r.sources {
			s.SetBatch(b.BeginBatch, b.EndBatch)
		}
	}
	src, ok := inj.(BatchSource)
	if !ok || len(r.batchers) == 0 {
		return
	}
	if len(r.batchers) == 1 {
		src.SetBatch(r.batchers[0].BeginBatch, r.batchers[0].EndBatch)
		return
	}
	bs := r.batchers
	src.SetBatch(func() {
		for _, b := range bs {
			b.BeginBatch()
		}
	}, func() {
		for _, b := range bs {
			b.EndBatch()
		}
	})
}

// binding is what Start ties the router to.
type binding struct {
	mesh    *mesh.Router // nil when started with static routes (tests)
	routes  routeTable
	ourself mesh.PeerName
	inj     Injector
}

// routeTable is the part of mesh's routes the data plane uses; m.Routes
// implements it, tests substitute static tables.
type routeTable interface {
	Unicast(dst mesh.PeerName) (mesh.PeerName, bool)
	Broadcast(src mesh.PeerName) []mesh.PeerName
}

// startStatic starts the router without a mesh (tests).
func (r *NetworkRouter) startStatic(ourself mesh.PeerName, routes routeTable, inj Injector) {
	r.lifecycle.Lock()
	defer r.lifecycle.Unlock()
	r.lifecycle.started = true
	r.bound.Store(&binding{routes: routes, ourself: ourself, inj: inj})
	r.lifecycle.wg.Add(1)
	go r.expireLoop(r.lifecycle.stop)
}

func (r *NetworkRouter) peerGone(p *mesh.Peer) {
	if n := r.mac.DeletePeer(p.Name); n > 0 {
		r.log.Info("purged MACs of removed peer", "peer", p.Name.String(), "count", n)
	}
}

func (r *NetworkRouter) expireLoop(stop <-chan struct{}) {
	defer r.lifecycle.wg.Done()
	t := time.NewTicker(min(r.cfg.MACMaxAge/10, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if n := r.mac.Expire(); n > 0 {
				r.log.Debug("expired MAC cache entries", "count", n)
			}
		}
	}
}

// Stop stops the router's background work and the overlay switch (and so
// every overlay). Idempotent.
func (r *NetworkRouter) Stop() {
	r.lifecycle.Lock()
	if !r.lifecycle.stopped {
		r.lifecycle.stopped = true
		close(r.lifecycle.stop)
	}
	r.lifecycle.Unlock()
	r.lifecycle.wg.Wait()
	r.sw.Stop()
}
