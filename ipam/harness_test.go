package ipam

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

// fakeClock is a manually advanced Clock.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*fakeTicker
}

type fakeTicker struct {
	c      chan time.Time
	every  time.Duration
	next   time.Time
	closed bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1795991078, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTicker{c: make(chan time.Time, 1), every: d, next: c.now.Add(d)}
	c.tickers = append(c.tickers, t)
	return t.c, func() { c.mu.Lock(); t.closed = true; c.mu.Unlock() }
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.tickers {
		for !t.closed && !t.next.After(c.now) {
			t.next = t.next.Add(t.every)
			select {
			case t.c <- c.now:
			default:
			}
		}
	}
}

// memNet is an in-memory gossip network with loss and partitions. Sends
// are queued; the test delivers them with pump, so runs are repeatable.
type memNet struct {
	t     testing.TB
	mu    sync.Mutex
	rnd   *rand.Rand
	loss  float64
	group map[mesh.PeerName]int
	peers map[mesh.PeerName]*Allocator
	order []mesh.PeerName
	queue []memMsg
	clock *fakeClock
	// strict sees every ring delivered, as a 2.8.1 peer would.
	strict strictObserver
}

type memMsg struct {
	unicast  bool
	src, dst mesh.PeerName
	payload  []byte
}

func newMemNet(t testing.TB, seed uint64) *memNet {
	return &memNet{t: t, rnd: rand.New(rand.NewPCG(seed, 7)), group: map[mesh.PeerName]int{},
		peers: map[mesh.PeerName]*Allocator{}, clock: newFakeClock()}
}

func (n *memNet) reachable(a, b mesh.PeerName) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.peers[b]
	return ok && n.group[a] == n.group[b]
}

func (n *memNet) enqueue(m memMsg) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.loss > 0 && n.rnd.Float64() < n.loss {
		return
	}
	n.queue = append(n.queue, m)
}

type memGossip struct {
	net  *memNet
	self mesh.PeerName
}

var _ mesh.Gossip = memGossip{}

func (g memGossip) GossipUnicast(dst mesh.PeerName, msg []byte) error {
	if !g.net.reachable(g.self, dst) {
		return fmt.Errorf("unicast to %s: unreachable", dst)
	}
	g.net.enqueue(memMsg{unicast: true, src: g.self, dst: dst, payload: append([]byte(nil), msg...)})
	return nil
}

func (n *memNet) peerOrder() []mesh.PeerName {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.order)
}

func (n *memNet) peer(p mesh.PeerName) *Allocator {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.peers[p]
}

func (g memGossip) GossipBroadcast(d mesh.GossipData) {
	for _, p := range g.net.peerOrder() {
		if p != g.self {
			for _, b := range d.Encode() {
				g.net.enqueue(memMsg{src: g.self, dst: p, payload: b})
			}
		}
	}
}

func (g memGossip) GossipNeighbourSubset(d mesh.GossipData) { g.GossipBroadcast(d) }

// addPeer creates, wires and starts an allocator named ::i.
func (n *memNet) addPeer(i int, mutate func(*Config)) *Allocator {
	name := mesh.PeerName(0x0a0000000000 + uint64(i))
	cfg := Config{
		OurName: name, OurUID: mesh.PeerUID(1000 + i), OurNickname: fmt.Sprintf("p%d", i),
		Clock: n.clock, Rand: rand.New(rand.NewPCG(uint64(i), 3)), CheckInvariants: true,
		IsKnownPeer: func(p mesh.PeerName) bool { return n.reachable(name, p) },
	}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	a.SetGossip(memGossip{net: n, self: name})
	n.mu.Lock()
	n.peers[name] = a
	n.order = append(n.order, name)
	n.mu.Unlock()
	a.Start()
	n.t.Cleanup(a.Stop)
	return a
}

// pump delivers queued messages until none are left (bounded).
func (n *memNet) pump() {
	for step := 0; step < 100000; step++ {
		n.mu.Lock()
		if len(n.queue) == 0 {
			n.mu.Unlock()
			return
		}
		m := n.queue[0]
		n.queue = n.queue[1:]
		dst, ok := n.peers[m.dst]
		cut := n.group[m.src] != n.group[m.dst]
		n.mu.Unlock()
		if !ok || cut {
			continue
		}
		n.strict.observe(n.t, m.payload, m.unicast)
		if m.unicast {
			_ = dst.OnGossipUnicast(m.src, m.payload)
		} else {
			_, _ = dst.OnGossipBroadcast(m.src, m.payload)
		}
	}
	n.t.Fatal("gossip did not quiesce")
}

// periodic delivers every peer's full state to every reachable peer, as
// mesh's 30 s gossip does.
func (n *memNet) periodic() {
	order := n.peerOrder()
	for _, p := range order {
		d := n.peer(p).Gossip()
		if d == nil {
			continue
		}
		n.strict.observe(n.t, d.Encode()[0], false)
		for _, q := range order {
			if q != p && n.reachable(p, q) {
				_, _ = n.peer(q).OnGossip(d.Encode()[0])
			}
		}
	}
}

// round advances time by one tick and runs gossip to quiescence.
func (n *memNet) round(tick time.Duration) {
	n.clock.Advance(tick)
	for _, p := range n.peerOrder() {
		_ = n.peer(p).do(func() {}) // let each actor see its tick
	}
	n.pump()
	n.periodic()
	n.pump()
}

// drive runs f in a goroutine and rounds of gossip until it finishes.
func drive[T any](n *memNet, maxRounds int, f func() T) (T, bool) {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	for i := 0; i < maxRounds; i++ {
		n.pump()
		select {
		case v := <-ch:
			return v, true
		default:
		}
		n.round(5 * time.Second)
	}
	select {
	case v := <-ch:
		return v, true
	case <-time.After(5 * time.Second):
		var zero T
		return zero, false
	}
}

type allocResult struct {
	c   address.CIDR
	err error
}

func (n *memNet) allocate(a *Allocator, ident string, subnet address.CIDR) allocResult {
	r, ok := drive(n, 100, func() allocResult {
		c, err := a.Allocate(context.Background(), ident, subnet)
		return allocResult{c, err}
	})
	if !ok {
		n.t.Fatalf("allocate %s never returned", ident)
	}
	return r
}

type meshName = mesh.PeerName
