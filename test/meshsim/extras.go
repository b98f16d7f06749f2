package meshsim

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"time"

	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/liveness"
	"github.com/weaveworks/mesh"
)

// pickAddresses chooses the Loopback block and the shared ports.
func (s *Sim) pickAddresses() error {
	if (s.opts.Liveness || s.opts.Sleeve) && !s.opts.Loopback {
		return fmt.Errorf("meshsim: Liveness and Sleeve need Loopback (one port for every peer)")
	}
	if !s.opts.Loopback {
		return nil
	}
	s.base = [2]byte{byte(20 + rand.IntN(200)), byte(rand.IntN(200))}
	var err error
	if s.port, err = FreePort(s.loopbackIP(0)); err != nil {
		return err
	}
	if s.opts.Liveness {
		s.lport, err = freeUDPPort(s.loopbackIP(0))
	}
	return err
}

// loopbackIP is peer i's address: 127.A.B.1 onwards, 250 per /24.
func (s *Sim) loopbackIP(i int) string {
	k := i + 1
	third := int(s.base[1]) + k/250
	return fmt.Sprintf("127.%d.%d.%d", s.base[0], third, k%250+1)
}

func freeUDPPort(host string) (int, error) {
	l, err := net.ListenPacket("udp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find free UDP port: %w", err)
	}
	defer l.Close()
	return l.LocalAddr().(*net.UDPAddr).Port, nil
}

func (s *Sim) startIPAM(p *Peer, log *slog.Logger) error {
	if !s.opts.IPAM {
		return nil
	}
	peers := p.Mesh.Peers
	a, err := ipam.New(ipam.Config{
		OurName: p.Name, OurUID: p.Mesh.Ourself.UID, OurNickname: p.NickName,
		Init:         s.ipamInit(),
		IsKnownPeer:  func(q mesh.PeerName) bool { return peers.Fetch(q) != nil },
		TickInterval: time.Second, Logger: log.With("component", "ipam"),
	})
	if err != nil {
		return fmt.Errorf("start IPAM of %s: %w", p.NickName, err)
	}
	g, err := p.Mesh.NewGossip("IPallocation", a.Gossiper())
	if err != nil {
		return fmt.Errorf("IPAM gossip of %s: %w", p.NickName, err)
	}
	out := ipam.NewOutbox(g, log.With("component", "ipam"))
	a.SetGossip(out)
	a.Start()
	p.IPAM, p.outbox = a, out
	return nil
}

// ipamInit seeds the ring with peer 0 (--ipalloc-init seed=p0): Paxos
// among dozens of peers over mesh gossip did not finish within the
// consensus timeout here. Other peers get space by allocating (Allocate).
func (s *Sim) ipamInit() ipam.Init {
	return ipam.Init{Mode: ipam.InitSeed, Seeds: []mesh.PeerName{PeerName(0)}}
}

// Allocate allocates one address for ident on peer i (in the default
// universe), which makes i a token holder if it had no space.
func (s *Sim) Allocate(ctx context.Context, i int, ident string) error {
	if _, err := s.Peers[i].IPAM.Allocate(ctx, ident, ipam.DefaultUniverse); err != nil {
		return fmt.Errorf("allocate %s on %s: %w", ident, s.Peers[i].NickName, err)
	}
	return nil
}

func (s *Sim) startLiveness(p *Peer, log *slog.Logger) error {
	if !s.opts.Liveness {
		return nil
	}
	d, err := liveness.New(liveness.Config{
		Name: p.Name.String(), BindAddr: p.IP, AdvertiseAddr: p.IP, Port: s.lport,
		Logger: log, Timing: s.opts.LivenessTiming, Seeds: liveness.MeshSeeds(p.Mesh),
		OnChange: func(c liveness.Change) {
			if n, err := mesh.PeerNameFromString(c.Peer); err == nil && c.To != liveness.Suspect {
				p.Router.SetPeerDead(n, c.To == liveness.Dead)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("start liveness of %s: %w", p.NickName, err)
	}
	p.Live = d
	if s.opts.IPAM && s.opts.ReclaimAfter > 0 {
		go s.reclaimLoop(p)
	}
	return nil
}

func (s *Sim) reclaimLoop(p *Peer) {
	r := liveness.NewReclaimer(liveness.ReclaimConfig{
		After: s.opts.ReclaimAfter, Us: p.Name.String(),
		Holders: func() []string {
			var out []string
			for _, e := range p.IPAM.Status().Entries {
				out = append(out, e.Peer)
			}
			return out
		},
		MeshKnows: func(q string) bool {
			n, err := mesh.PeerNameFromString(q)
			return err == nil && p.Mesh.Peers.Fetch(n) != nil
		},
		Takeover: func(q string) error { _, err := p.IPAM.AdminTakeoverRanges(q); return err },
	}, p.Live)
	t := time.NewTicker(s.opts.ReclaimAfter / 4)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			r.Tick(now)
		}
	}
}

// stopExtras stops a peer's liveness (leaving gracefully or not) and
// IPAM. Idempotent.
func (s *Sim) stopExtras(p *Peer, graceful bool) {
	p.stopOnce.Do(func() { close(p.stop) })
	if p.Live != nil {
		if graceful {
			_ = p.Live.Close()
		} else {
			_ = p.Live.Kill()
		}
	}
	if p.IPAM != nil {
		p.IPAM.Stop()
	}
	if p.outbox != nil {
		if graceful {
			p.outbox.Close()
		} else {
			go p.outbox.Close() // what it still sends fails once the mesh router stops
		}
	}
}

// Kill makes peer i vanish as a SIGKILLed router does: its liveness stops
// without leaving, its IPAM stops, and its mesh router stops, which (as
// the kernel does for a killed process) closes its listener and every
// connection, and it dials no more. Its links are cut too, so the data
// plane drops frames to it at once.
func (s *Sim) Kill(i int) {
	p := s.Peers[i]
	p.killed = true
	s.stopExtras(p, false)
	_ = p.Mesh.Stop()
	p.Router.Stop()
	for j, q := range s.Peers {
		if j != i {
			delete(s.links, mkLink(p.Name, q.Name))
			s.Net.Cut(p.Name, q.Name)
		}
	}
}

// Alive returns the peers not killed.
func (s *Sim) Alive() []*Peer {
	var out []*Peer
	for _, p := range s.Peers {
		if !p.killed {
			out = append(out, p)
		}
	}
	return out
}

// PrimeIPAM asks peer i's allocator to establish the ring, as the first
// `weave attach` of a cold cluster does; the ring reaches everyone by
// gossip.
func (s *Sim) PrimeIPAM(ctx context.Context, i int) error {
	if err := s.Peers[i].IPAM.Prime(ctx); err != nil {
		return fmt.Errorf("prime IPAM on %s: %w", s.Peers[i].NickName, err)
	}
	return nil
}

// LoopbackIP returns the Loopback address of peer i; i may be past the
// last peer (an address for a router outside the Sim, e.g. a real weaver).
func (s *Sim) LoopbackIP(i int) string { return s.loopbackIP(i) }

// Ports returns the shared mesh (and sleeve) port and the liveness port.
func (s *Sim) Ports() (meshPort, livenessPort int) { return s.port, s.lport }

// SpreadTargets returns the peers that peer i of a ring of n dials, so
// that every router ends up linked to its two ring neighbours, the peer
// opposite and about two random peers (a connected graph of small
// diameter): i dials i+1, i+n/2 if i is in the first half, and one random
// peer. Each link is dialled from one end only: a pair that dials each
// other (addresses with ports) keeps redialling the duplicate, which mesh
// refuses, with a growing backoff, so the connections never settle.
func SpreadTargets(i, n int, rng *rand.Rand) []int {
	seen := map[int]bool{i: true, (i + n - 1) % n: true}
	var out []int
	add := func(j int) {
		if !seen[j] {
			seen[j] = true
			out = append(out, j)
		}
	}
	add((i + 1) % n)
	if i < n/2 {
		add(i + n/2)
	} else {
		seen[i-n/2] = true // it dials us
	}
	add(rng.IntN(n))
	return out
}

// NewcomerTargets returns the initial peers of a router joining a ring of
// n built with SpreadTargets (weave launch with four peers): the last and
// the first router, the middle one and a random one.
func NewcomerTargets(n int, rng *rand.Rand) []int {
	seen := map[int]bool{}
	var out []int
	for _, j := range []int{n - 1, 0, n / 2, rng.IntN(n)} {
		if !seen[j] {
			seen[j] = true
			out = append(out, j)
		}
	}
	return out
}

// IsKilled reports whether p was killed.
func (s *Sim) IsKilled(p *Peer) bool { return p.killed }
