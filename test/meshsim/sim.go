package meshsim

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/liveness"
	"github.com/seedf75a49c6/weave/router"
	"github.com/seedf75a49c6/weave/sleeve"
	"github.com/weaveworks/mesh"
)

// Options configures a Sim. Zero fields take the documented defaults.
type Options struct {
	OverlayName string        // fake overlay name; default "sleeve"
	Logger      *slog.Logger  // default: discard
	Router      router.Config // per-peer router config (Logger is filled in)
	Timeout     time.Duration // convergence deadline; default 15 s
	// PeerDiscovery lets peers dial peers they learn about from gossip;
	// default false, so the topology is exactly what Connect builds.
	PeerDiscovery bool
	// Loopback gives every peer its own address 127.A.x.y (a random
	// 127.A block per Sim) and all of them one shared port, as real hosts
	// have. Needed with PeerDiscovery: mesh dials a peer it learns about
	// at the peer's IP and its *own* port. Default: 127.0.0.1 and a port
	// per peer.
	Loopback  bool
	ConnLimit int // mesh connection limit per peer; default 64
	// Liveness starts a liveness detector per peer (needs Loopback),
	// joined through mesh's known peers as in the daemon.
	Liveness       bool
	LivenessTiming liveness.Timing
	// IPAM starts an allocator per peer on gossip channel "IPallocation",
	// the ring seeded by peer 0.
	IPAM bool
	// ReclaimAfter, with Liveness and IPAM, runs a reclaimer per peer
	// (--ipalloc-reclaim-after), checked every ReclaimAfter/4.
	ReclaimAfter time.Duration
	// GossipInterval is mesh's gossip interval; default mesh's 30 s.
	GossipInterval time.Duration
	// Sleeve gives every peer the real sleeve overlay (UDP on its
	// Loopback address and the shared port) instead of a FakeOverlay, so
	// a real weaver can join the simulation: its sleeve forwarders need
	// heartbeats answered. Needs Loopback; Peer.Overlay is then nil.
	Sleeve bool
}

// Peer is one simulated weave peer.
type Peer struct {
	Name     mesh.PeerName
	NickName string
	Addr     string // mesh TCP address
	Mesh     *mesh.Router
	Router   *router.NetworkRouter
	Overlay  *FakeOverlay // nil with Options.Sleeve
	Injector *Injector
	IP       string             // its own address
	Live     *liveness.Detector // with Options.Liveness
	IPAM     *ipam.Allocator    // with Options.IPAM
	outbox   *ipam.Outbox       // IPAM's sends
	stop     chan struct{}      // stops the reclaimer
	stopOnce sync.Once
	killed   bool
}

// Sim is a set of peers sharing one Network.
type Sim struct {
	Peers []*Peer
	Net   *Network
	opts  Options
	links map[link]bool // links requested with Connect
	n     int           // peers requested
	base  [2]byte       // Loopback: 127.base[0].base[1]... block
	port  int           // Loopback: the shared mesh port
	lport int           // Liveness: the shared liveness port
}

// PeerName returns the deterministic name of peer i: aa:00:00:00:00:<i+1>.
func PeerName(i int) mesh.PeerName {
	return mesh.PeerName(0xaa0000000000 + uint64(i) + 1)
}

// New starts n peers (not yet connected). Everything is stopped in
// tb.Cleanup.
func New(tb testing.TB, n int, opts Options) *Sim {
	tb.Helper()
	if opts.OverlayName == "" {
		opts.OverlayName = "sleeve"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 15 * time.Second
	}
	s := &Sim{Net: NewNetwork(), opts: opts, links: make(map[link]bool), n: n}
	if err := s.pickAddresses(); err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		p, err := s.startPeer(i)
		if err != nil {
			tb.Fatalf("start peer %d: %v", i, err)
		}
		s.Peers = append(s.Peers, p)
	}
	tb.Cleanup(s.Stop)
	return s
}

func (s *Sim) startPeer(i int) (*Peer, error) {
	ip, port, err := s.address(i)
	if err != nil {
		return nil, err
	}
	name := PeerName(i)
	nick := "p" + strconv.Itoa(i)
	log := s.opts.Logger.With("peer", nick)
	cfg := s.opts.Router
	cfg.Logger = log
	var (
		ov *FakeOverlay
		nr *router.NetworkRouter
	)
	if s.opts.Sleeve {
		fh := &router.LateHandler{}
		sl, err := sleeve.New(sleeve.Config{Host: ip, Port: port, LocalPeer: name, Handler: fh, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("start sleeve of %s: %w", nick, err)
		}
		nr = router.NewNetworkRouter(cfg, sl)
		fh.Set(nr)
	} else {
		ov = NewFakeOverlay(s.opts.OverlayName, name, s.Net)
		nr = router.NewNetworkRouter(cfg, ov)
	}
	m, err := mesh.NewRouter(s.meshConfig(ip, port), name, nick, nr.MeshOverlay(), meshLogger{log})
	if err != nil {
		return nil, fmt.Errorf("create mesh router %s: %w", name, err)
	}
	p := &Peer{Name: name, NickName: nick, Addr: net.JoinHostPort(ip, strconv.Itoa(port)), IP: ip,
		Mesh: m, Router: nr, Overlay: ov, Injector: &Injector{}, stop: make(chan struct{})}
	if err := s.startIPAM(p, log); err != nil {
		return nil, err
	}
	nr.Start(m, p.Injector)
	if ov != nil {
		s.Net.Attach(name, nr, ov)
	} else {
		s.Net.Attach(name, nr)
	}
	m.Start()
	if err := s.startLiveness(p, log); err != nil {
		return nil, err
	}
	return p, nil
}

func (s *Sim) meshConfig(ip string, port int) mesh.Config {
	limit := s.opts.ConnLimit
	if limit == 0 {
		limit = 64
	}
	mc := mesh.Config{
		Host: ip, Port: port, ConnLimit: limit, ProtocolMinVersion: mesh.ProtocolMaxVersion,
		PeerDiscovery: s.opts.PeerDiscovery, TrustedSubnets: []*net.IPNet{},
	}
	if s.opts.GossipInterval > 0 {
		gi := s.opts.GossipInterval
		mc.GossipInterval = &gi
	}
	return mc
}

// address returns peer i's IP and mesh port.
func (s *Sim) address(i int) (string, int, error) {
	if !s.opts.Loopback {
		port, err := FreePort("127.0.0.1")
		return "127.0.0.1", port, err
	}
	return s.loopbackIP(i), s.port, nil
}

// FreePort returns a TCP port free on host just now.
func FreePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Connect makes peer i dial peer j.
func (s *Sim) Connect(tb testing.TB, i, j int) {
	tb.Helper()
	s.links[mkLink(s.Peers[i].Name, s.Peers[j].Name)] = true
	if errs := s.Peers[i].Mesh.ConnectionMaker.InitiateConnections([]string{s.Peers[j].Addr}, false); len(errs) > 0 {
		tb.Fatalf("connect %d -> %d: %v", i, j, errs)
	}
}

// Cut cuts the link between peers i and j (frames dropped, forwarders
// fail) and stops both from redialling each other.
func (s *Sim) Cut(i, j int) {
	a, b := s.Peers[i], s.Peers[j]
	delete(s.links, mkLink(a.Name, b.Name))
	s.Net.Cut(a.Name, b.Name)
	a.Mesh.ConnectionMaker.ForgetConnections([]string{b.Addr})
	b.Mesh.ConnectionMaker.ForgetConnections([]string{a.Addr})
}

// reachable returns, for peer i, the set of peers reachable over the
// links requested with Connect (and not cut).
func (s *Sim) reachable(i int) map[mesh.PeerName]bool {
	seen := map[mesh.PeerName]bool{s.Peers[i].Name: true}
	work := []mesh.PeerName{s.Peers[i].Name}
	for len(work) > 0 {
		cur := work[0]
		work = work[1:]
		for l := range s.links {
			for _, next := range []mesh.PeerName{l.a, l.b} {
				if (l.a == cur || l.b == cur) && !seen[next] {
					seen[next] = true
					work = append(work, next)
				}
			}
		}
	}
	return seen
}

// linked reports whether a and b have a (not cut) link between them.
func (s *Sim) linked(a, b mesh.PeerName) bool {
	for l := range s.links {
		if (l.a == a && l.b == b) || (l.a == b && l.b == a) {
			return true
		}
	}
	return false
}

// AwaitConverged polls until every peer has a unicast route to exactly the
// peers reachable over the connected links, directly linked peers reached
// directly, or fails the test at the deadline.
func (s *Sim) AwaitConverged(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(s.opts.Timeout)
	for {
		problem := s.convergenceProblem()
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("mesh did not converge within %v: %s", s.opts.Timeout, problem)
		}
		time.Sleep(20 * time.Millisecond) // polling: mesh offers no convergence event
	}
}

func (s *Sim) convergenceProblem() string {
	for i, p := range s.Peers {
		want := s.reachable(i)
		for _, q := range s.Peers {
			if q == p {
				continue
			}
			hop, has := p.Mesh.Routes.Unicast(q.Name)
			if has != want[q.Name] {
				return fmt.Sprintf("peer %s route to %s: have %v, want %v", p.NickName, q.NickName, has, want[q.Name])
			}
			// A directly linked peer must be reached directly: until both
			// ends see the link established, mesh may route around it.
			if s.linked(p.Name, q.Name) && hop != q.Name {
				return fmt.Sprintf("peer %s reaches linked %s via %s", p.NickName, q.NickName, hop)
			}
		}
	}
	return ""
}

// Stop stops every peer's router, overlay and mesh (the patched mesh
// closes its listener and connections). Idempotent.
func (s *Sim) Stop() {
	var wg sync.WaitGroup
	for _, p := range s.Peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stopExtras(p, false) // no graceful leave: everyone stops anyway
			p.Router.Stop()
			_ = p.Mesh.Stop()
		}()
	}
	wg.Wait()
}

// meshLogger adapts slog to mesh.Logger.
type meshLogger struct{ l *slog.Logger }

func (m meshLogger) Printf(format string, args ...any) {
	m.l.Debug(fmt.Sprintf(format, args...), "component", "mesh")
}
