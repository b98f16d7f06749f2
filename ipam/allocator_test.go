package ipam

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/ipam/address"
)

var universe12 = address.MustParseCIDR("10.32.0.0/12")

func consensus(n uint) func(*Config) {
	return func(c *Config) { c.Init = Init{Mode: InitConsensus, Quorum: n/2 + 1} }
}

// TestTwoPeersLikeWeave reproduces the plain-ipam capture: consensus=2,
// h1 allocates first, the /12 is split in two, h2's first address is 10.40.0.0.
func TestTwoPeersLikeWeave(t *testing.T) {
	n := newMemNet(t, 1)
	h1 := n.addPeer(1, consensus(2))
	h2 := n.addPeer(2, consensus(2))
	r := n.allocate(h1, "c1", universe12)
	if r.err != nil || r.c.String() != "10.32.0.1/12" {
		t.Fatalf("h1 got %v %v", r.c, r.err)
	}
	r = n.allocate(h2, "c2", universe12)
	if r.err != nil || r.c.String() != "10.40.0.0/12" {
		t.Fatalf("h2 got %v %v", r.c, r.err)
	}
	again := n.allocate(h2, "c2", universe12)
	if again.c != r.c {
		t.Fatalf("allocation not idempotent: %v then %v", r.c, again.c)
	}
	var b strings.Builder
	h1.Status().WriteText(&b)
	want := "0a:00:00:00:00:01(p1)                   524288 IPs (50.0% of total) (1 active)\n" +
		"0a:00:00:00:00:02(p2)                   524288 IPs (50.0% of total) \n"
	if b.String() != want {
		t.Fatalf("status ipam:\n%q\nwant\n%q", b.String(), want)
	}
}

// TestConsensusFailsBounded: a quorum that cannot be reached fails the
// allocation after ConsensusTimeout with a message naming what is missing.
func TestConsensusFailsBounded(t *testing.T) {
	n := newMemNet(t, 2)
	a := n.addPeer(1, consensus(3))
	r := n.allocate(a, "c1", universe12)
	if !errors.Is(r.err, ErrNoConsensus) {
		t.Fatalf("want ErrNoConsensus, got %v %v", r.c, r.err)
	}
	for _, want := range []string{"quorum: 2", "known: 1", "1 more peer"} {
		if !strings.Contains(r.err.Error(), want) {
			t.Errorf("error %q lacks %q", r.err, want)
		}
	}
	st := a.Status()
	if !strings.HasPrefix(st.State, "awaiting consensus (quorum: 2, known: 1)") || !strings.Contains(st.Problem, "1 more peer") {
		t.Fatalf("status %q / %q", st.State, st.Problem)
	}
	// A second peer arrives: consensus is reached and allocation works.
	n.addPeer(2, consensus(3))
	if r := n.allocate(a, "c1", universe12); r.err != nil {
		t.Fatalf("after second peer joined: %v", r.err)
	}
}

func TestObserverGetsRing(t *testing.T) {
	n := newMemNet(t, 3)
	n.addPeer(1, consensus(1))
	obs := n.addPeer(2, func(c *Config) { c.Init = Init{Mode: InitObserver} })
	r := n.allocate(obs, "c1", universe12)
	if r.err != nil {
		t.Fatalf("observer allocate: %v", r.err)
	}
	if got := obs.Status().Entries; len(got) < 2 {
		t.Fatalf("observer should own donated space, entries %v", got)
	}
}

func TestSeedMode(t *testing.T) {
	n := newMemNet(t, 4)
	seeds := func(c *Config) { c.Init = Init{Mode: InitSeed, Seeds: []meshName{0x0a0000000001, 0x0a0000000002}} }
	a := n.addPeer(1, seeds)
	b := n.addPeer(2, seeds)
	ra := n.allocate(a, "x", universe12)
	rb := n.allocate(b, "y", universe12)
	if ra.err != nil || rb.err != nil || ra.c.String() != "10.32.0.1/12" || rb.c.String() != "10.40.0.0/12" {
		t.Fatalf("seeded allocations %v %v / %v %v", ra.c, ra.err, rb.c, rb.err)
	}
}

// A seed-mode peer without its ring yet does not take part in elections:
// another peer's election state or an observer's call for one draws no
// broadcast from it.
func TestSeedModeNeverElects(t *testing.T) {
	n := newMemNet(t, 6)
	seeds := func(c *Config) { c.Init = Init{Mode: InitSeed, Seeds: []meshName{0x0a0000000001}} }
	s := n.addPeer(2, seeds)
	elector := n.addPeer(3, consensus(3))
	observer := n.addPeer(4, func(c *Config) { c.Init = Init{Mode: InitObserver} })
	_ = elector.do(func() { elector.establishRing() }) // proposes: its state carries Paxos claims
	_ = observer.do(func() { observer.establishRing() })
	n.mu.Lock()
	n.queue = nil
	n.mu.Unlock()
	for _, from := range []*Allocator{elector, observer} {
		if _, err := s.OnGossipBroadcast(from.cfg.OurName, from.Gossip().Encode()[0]); err != nil {
			t.Fatal(err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range n.queue {
		if m.src == s.cfg.OurName {
			t.Fatalf("the seed-mode peer sent %d bytes (unicast %v) in reply to election state", len(m.payload), m.unicast)
		}
	}
	if st := s.Status(); st.Paxos != nil || len(st.Entries) != 0 {
		t.Fatalf("seed-mode peer: paxos %+v, %d ring entries; want neither", st.Paxos, len(st.Entries))
	}
}

func TestClaimAndFree(t *testing.T) {
	n := newMemNet(t, 5)
	a := n.addPeer(1, consensus(2))
	b := n.addPeer(2, consensus(2))
	n.allocate(a, "prime", universe12)
	ctx := context.Background()
	claim := func(who *Allocator, id, cidr string) error {
		e, _ := drive(n, 20, func() error { return who.Claim(ctx, id, address.MustParseCIDR(cidr), false) })
		return e
	}
	if err := claim(a, "c1", "10.32.0.9/12"); err != nil {
		t.Fatal(err)
	}
	if err := claim(a, "c1", "10.32.0.9/12"); err != nil {
		t.Fatalf("re-claim by same ID: %v", err)
	}
	if err := claim(a, "c2", "10.32.0.9/12"); !errors.Is(err, ErrAddressInUse) {
		t.Fatalf("claim by other ID: %v", err)
	}
	if err := claim(a, "c3", "192.168.1.1/24"); err != nil {
		t.Fatalf("claim outside range should just be recorded: %v", err)
	}
	// b owns 10.40.0.0/13 but has nothing allocated: it hands 10.40.0.5 over.
	if err := claim(a, "c4", "10.40.0.5/12"); err != nil {
		t.Fatalf("claim of other peer's free address: %v", err)
	}
	if cs, _ := b.Lookup("c4", universe12); len(cs) != 0 {
		t.Fatal("b recorded a's claim")
	}
	r := n.allocate(b, "d1", universe12)
	if r.err != nil || r.c.Addr == address.MustParseCIDR("10.40.0.5/32").Addr {
		t.Fatalf("b allocated %v %v (duplicate of claimed address?)", r.c, r.err)
	}
	if err := a.Free("c1", address.MustParseCIDR("10.32.0.9/32").Addr); err != nil {
		t.Fatal(err)
	}
	if err := a.Free("c1", address.MustParseCIDR("10.32.0.9/32").Addr); err == nil {
		t.Fatal("double free accepted")
	}
	if err := a.Delete("c4"); err != nil {
		t.Fatal(err)
	}
	if cs, _ := a.Lookup("c4", universe12); len(cs) != 0 {
		t.Fatal("delete left addresses")
	}
}

func TestBadInput(t *testing.T) {
	n := newMemNet(t, 6)
	a := n.addPeer(1, consensus(1))
	ctx := context.Background()
	for _, id := range []string{"", "tab\there", "bad\xffutf8", strings.Repeat("x", 300), "nul\x00"} {
		if _, err := a.Allocate(ctx, id, universe12); !errors.Is(err, ErrBadIdent) {
			t.Errorf("ident %q: %v", id, err)
		}
	}
	if _, err := a.Allocate(ctx, "c", address.MustParseCIDR("10.32.0.1/12")); !errors.Is(err, ErrConfig) {
		t.Errorf("non-network subnet: %v", err)
	}
	if _, err := a.Allocate(ctx, "c", address.MustParseCIDR("10.32.0.0/31")); !errors.Is(err, ErrConfig) {
		t.Errorf("tiny subnet: %v", err)
	}
	if _, err := a.Allocate(ctx, "c", address.MustParseCIDR("192.168.0.0/24")); !errors.Is(err, ErrSubnetNotInRange) {
		t.Errorf("foreign subnet: %v", err)
	}
	for _, msg := range [][]byte{nil, {0}, {1}, {2, 1, 2}, {9, 1}, {1, 0xff, 0xff, 0xff}} {
		if err := a.OnGossipUnicast(0x0a0000000009, msg); err == nil {
			t.Errorf("unicast %x accepted", msg)
		}
	}
	if _, err := a.OnGossipBroadcast(0x0a0000000009, []byte{3, 4, 5}); err == nil {
		t.Error("garbage broadcast accepted")
	}
	if _, err := New(Config{OurName: 1, Universe: address.MustParseCIDR("10.0.0.1/8")}); !errors.Is(err, ErrConfig) {
		t.Errorf("bad range: %v", err)
	}
	if _, err := New(Config{OurName: 1, Universe: address.MustParseCIDR("10.0.0.0/31")}); !errors.Is(err, ErrConfig) {
		t.Errorf("tiny range: %v", err)
	}
	if _, err := New(Config{OurName: 1, Universe: address.MustParseCIDR("10.0.0.0/30"),
		Init: Init{Mode: InitSeed, Seeds: []meshName{1, 2, 3, 4, 5}}}); !errors.Is(err, ErrConfig) {
		t.Errorf("range too small for seeds: %v", err)
	}
	for _, id := range []string{"ok", "weave:expose", "/var/run/netns/c1", "1234", "with space"} {
		if r := n.allocate(a, id, universe12); r.err != nil {
			t.Fatalf("allocate for %q after bad input: %v", id, r.err)
		}
	}
}

func TestParseInit(t *testing.T) {
	for in, want := range map[string]Init{
		"": {Mode: InitConsensus}, "consensus": {Mode: InitConsensus}, "consensus=5": {Mode: InitConsensus, Quorum: 3},
		"observer": {Mode: InitObserver},
	} {
		got, err := ParseInit(in)
		if err != nil || got.Mode != want.Mode || got.Quorum != want.Quorum {
			t.Errorf("ParseInit(%q) = %+v, %v", in, got, err)
		}
	}
	got, err := ParseInit("seed=aa:00:00:00:00:01,aa:00:00:00:00:02")
	if err != nil || len(got.Seeds) != 2 || got.Mode != InitSeed {
		t.Errorf("seed: %+v %v", got, err)
	}
	for _, bad := range []string{"consensus=0", "consensus=x", "seed=", "seed=zz", "observer=1", "magic"} {
		if _, err := ParseInit(bad); err == nil {
			t.Errorf("ParseInit(%q) accepted", bad)
		}
	}
}

func TestStopIdempotentAndFailsPending(t *testing.T) {
	n := newMemNet(t, 7)
	a := n.addPeer(1, consensus(3))
	done := make(chan error, 1)
	go func() { _, err := a.Allocate(context.Background(), "c", universe12); done <- err }()
	// No event marks "op queued": poll, and fail if it never is.
	netnstest.WaitFor(t, 5*time.Second, "the allocation to be pending", func() error {
		if n := len(a.Status().PendingAllocates); n == 0 {
			return errors.New("no pending allocation")
		}
		return nil
	})
	a.Stop()
	a.Stop()
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Fatalf("pending op after Stop: %v", err)
	}
	if _, err := a.Allocate(context.Background(), "d", universe12); !errors.Is(err, ErrStopped) {
		t.Fatalf("allocate after Stop: %v", err)
	}
}

// TestElectionAfterPeriodicGossip: periodic gossip makes every peer join the
// election before anyone has proposed; a later allocation must still
// propose (regression: it used to wait for a proposal that never came).
func TestElectionAfterPeriodicGossip(t *testing.T) {
	n := newMemNet(t, 8)
	a := n.addPeer(1, consensus(3))
	n.addPeer(2, consensus(3))
	n.addPeer(3, consensus(3))
	n.periodic()
	n.pump()
	if r := n.allocate(a, "c1", universe12); r.err != nil {
		t.Fatalf("allocate after periodic gossip: %v", r.err)
	}
}

// TestEarlyClaimIsProtected: a claim accepted before the ring exists
// (noErrorOnUnknown) is honoured once the ring arrives: the address is
// never handed to another container.
func TestEarlyClaimIsProtected(t *testing.T) {
	n := newMemNet(t, 9)
	a := n.addPeer(1, consensus(3))
	if err := a.Claim(context.Background(), "early", address.MustParseCIDR("10.32.0.1/12"), true); err != nil {
		t.Fatal(err)
	}
	if len(a.Status().Entries) != 0 {
		t.Fatal("ring exists already; the test needs a claim before consensus")
	}
	n.addPeer(2, consensus(3))
	r := n.allocate(a, "late", universe12)
	if r.err != nil || r.c.String() == "10.32.0.1/12" {
		t.Fatalf("late allocation got %v %v (the early claim's address?)", r.c, r.err)
	}
}

// TestDifferentSeedsReported: gossip from a ring seeded by other peers is
// refused, and status says so.
func TestDifferentSeedsReported(t *testing.T) {
	n := newMemNet(t, 10)
	a := n.addPeer(1, consensus(1))
	b := n.addPeer(2, consensus(1))
	n.mu.Lock()
	n.group[b.cfg.OurName] = 1
	n.mu.Unlock()
	n.allocate(a, "x", universe12)
	n.allocate(b, "y", universe12)
	n.mu.Lock()
	clear(n.group)
	n.mu.Unlock()
	n.round(5e9)
	if p := a.Status().Problem; !strings.Contains(p, "seeded by different peers") {
		t.Fatalf("status problem %q", p)
	}
}

// TestIdleClusterAdoptsRing: two peers each created a ring alone (quorum 1,
// partitioned). After the heal, the one holding no addresses abandons its
// ring for the one in use, in either seed order; then both allocate from
// one ring without duplicates and status shows no conflict.
func TestIdleClusterAdoptsRing(t *testing.T) {
	for _, busyFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("busyIsLowerSeed=%v", busyFirst), func(t *testing.T) {
			n := newMemNet(t, 11)
			a := n.addPeer(1, consensus(1))
			b := n.addPeer(2, consensus(1))
			busy, idle := a, b
			if !busyFirst {
				busy, idle = b, a
			}
			n.mu.Lock()
			n.group[b.cfg.OurName] = 1
			n.mu.Unlock()
			first := n.allocate(busy, "x", universe12)
			if _, ok := drive(n, 5, func() error { return idle.Prime(context.Background()) }); !ok {
				t.Fatal("idle peer did not build its ring")
			}
			n.mu.Lock()
			clear(n.group)
			n.mu.Unlock()
			n.round(5e9)
			n.round(5e9)
			second := n.allocate(idle, "y", universe12)
			if first.err != nil || second.err != nil || first.c.Addr == second.c.Addr {
				t.Fatalf("allocations %v %v / %v %v", first.c, first.err, second.c, second.err)
			}
			checkConverged(t, n)
			for _, p := range []*Allocator{a, b} {
				if pr := p.Status().Problem; pr != "" {
					t.Fatalf("%s still reports %q", p.cfg.OurNickname, pr)
				}
			}
		})
	}
}

// TestRangeTooSmallForPeers: consensus among more peers than addresses
// fails the allocation at once with a clear error instead of hanging.
func TestRangeTooSmallForPeers(t *testing.T) {
	n := newMemNet(t, 12)
	tiny := address.MustParseCIDR("10.1.0.0/30")
	var as []*Allocator
	for i := 1; i <= 5; i++ {
		as = append(as, n.addPeer(i, func(c *Config) {
			consensus(5)(c)
			c.Universe, c.DefaultSubnet = tiny, tiny
		}))
	}
	n.periodic() // everyone knows everyone: the value will name 5 peers
	n.pump()
	r := n.allocate(as[0], "c", tiny)
	if !errors.Is(r.err, ErrConfig) || !strings.Contains(r.err.Error(), "too small") {
		t.Fatalf("allocate: %v %v", r.c, r.err)
	}
	if p := as[0].Status().Problem; !strings.Contains(p, "too small") {
		t.Fatalf("status problem %q", p)
	}
}

// TestNoContainerIDFilesUnderAddress: each allocation for NoContainerID is
// a new address, recorded under its own text and released by it.
func TestNoContainerIDFilesUnderAddress(t *testing.T) {
	n := newMemNet(t, 1)
	a := n.addPeer(1, consensus(1))
	r1 := n.allocate(a, NoContainerID, universe12)
	r2 := n.allocate(a, NoContainerID, universe12)
	if r1.err != nil || r2.err != nil || r1.c == r2.c {
		t.Fatalf("two NoContainerID allocations: %v %v / %v %v", r1.c, r1.err, r2.c, r2.err)
	}
	owned, err := a.Owned()
	if err != nil {
		t.Fatal(err)
	}
	if got := owned[r1.c.Addr.String()]; len(got) != 1 || got[0] != r1.c {
		t.Fatalf("owned[%s] = %v, want [%v]; all: %v", r1.c.Addr, got, r1.c, owned)
	}
	if _, ok := owned[NoContainerID]; ok {
		t.Fatalf("allocation recorded under %q: %v", NoContainerID, owned)
	}
	if err := a.Free(r1.c.Addr.String(), r1.c.Addr); err != nil {
		t.Fatalf("free by address ident: %v", err)
	}
}
