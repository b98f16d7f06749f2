package meshsim

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/weaveworks/mesh"

	"github.com/seedf75a49c6/weave/router"
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
}

// Peer is one simulated weave peer.
type Peer struct {
	Name     mesh.PeerName
	NickName string
	Addr     string // mesh TCP address
	Mesh     *mesh.Router
	Router   *router.NetworkRouter
	Overlay  *FakeOverlay
	Injector *Injector
}

// Sim is a set of peers sharing one Network.
type Sim struct {
	Peers []*Peer
	Net   *Network
	opts  Options
	links map[link]bool // links requested with Connect
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
	s := &Sim{Net: NewNetwork(), opts: opts, links: make(map[link]bool)}
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
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	name := PeerName(i)
	nick := "p" + strconv.Itoa(i)
	log := s.opts.Logger.With("peer", nick)
	cfg := s.opts.Router
	cfg.Logger = log
	ov := NewFakeOverlay(s.opts.OverlayName, name, s.Net)
	nr := router.NewNetworkRouter(cfg, ov)
	m, err := mesh.NewRouter(mesh.Config{
		Host: "127.0.0.1", Port: port, ConnLimit: 64, ProtocolMinVersion: mesh.ProtocolMaxVersion,
		PeerDiscovery: s.opts.PeerDiscovery, TrustedSubnets: []*net.IPNet{},
	}, name, nick, nr.MeshOverlay(), meshLogger{log})
	if err != nil {
		return nil, fmt.Errorf("create mesh router %s: %w", name, err)
	}
	inj := &Injector{}
	nr.Start(m, inj)
	s.Net.Attach(name, nr, ov)
	m.Start()
	return &Peer{Name: name, NickName: nick, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Mesh: m, Router: nr, Overlay: ov, Injector: inj}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
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

// Stop stops every peer's router and overlay. Idempotent. (The mesh
// library cannot close its listener; those goroutines outlive the Sim.)
func (s *Sim) Stop() {
	for _, p := range s.Peers {
		p.Router.Stop()
		_ = p.Mesh.Stop()
	}
}

// meshLogger adapts slog to mesh.Logger.
type meshLogger struct{ l *slog.Logger }

func (m meshLogger) Printf(format string, args ...any) {
	m.l.Debug(fmt.Sprintf(format, args...), "component", "mesh")
}
