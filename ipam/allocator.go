// Package ipam allocates container IP addresses with no external store.
//
// Ownership of the address universe (--ipalloc-range) is a ring CRDT
// (package ring) gossiped on the mesh channel "IPallocation" in Weave Net
// 2.8.1's encoding; each peer allocates only from ranges it owns (package
// space), asks other peers for space when it runs out, and the ring is first
// created by Paxos consensus (package paxos), by seed peers, or received by
// observers. The Allocator is a single-goroutine actor: every public method
// posts a closure to it, so ring, space and pending operations need no
// locks; time comes from an injected Clock.
//
// Unlike Weave, every wait is bounded (ConsensusTimeout, SpaceTimeout) and
// fails with an error naming what is missing, and administrative takeover of
// a dead peer's space (rmpeer) is tentative until every other token holder
// has acknowledged it, so two concurrent rmpeers cannot hand the same range
// to two peers. See docs/ipam.md.
package ipam

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/seedf75a49c6/weave/ipam/paxos"
	"github.com/seedf75a49c6/weave/ipam/ring"
	"github.com/seedf75a49c6/weave/ipam/space"
	"github.com/weaveworks/mesh"
)

// Errors callers branch on.
var (
	ErrStopped          = errors.New("IPAM allocator stopped")
	ErrNoConsensus      = errors.New("IP allocation ring not established")
	ErrNoSpace          = errors.New("no free addresses")
	ErrOutsideRange     = errors.New("address outside the allocation range")
	ErrAddressInUse     = errors.New("address in use by another container")
	ErrClaimRefused     = errors.New("owner did not hand over the address")
	ErrUnknownPeer      = errors.New("unknown peer")
	ErrPeerReachable    = errors.New("peer is still reachable")
	ErrPeerDropping     = errors.New("peer is unreachable and about to be dropped")
	ErrBadIdent         = errors.New("invalid container ID")
	ErrShutdown         = errors.New("IPAM is shut down (weave reset)")
	ErrSubnetNotInRange = errors.New("subnet outside the allocation range")
	ErrNoAddresses      = errors.New("no addresses")
	ErrNotHeld          = errors.New("address not held")
	ErrRemoveSelf       = errors.New("cannot remove ourselves")
)

// Allocator is the IPAM actor. Create with New, then SetGossip and Start.
type Allocator struct {
	cfg     Config
	log     *slog.Logger
	actions chan func()

	lifecycle struct {
		sync.Mutex
		started, stopped bool
		quit             chan struct{}
		done             chan struct{}
	}
	gossipMu sync.Mutex
	gossip   mesh.Gossip

	// Owned by the actor goroutine (or by New before Start).
	ring          *ring.Ring
	space         *space.Space
	paxos         *paxos.Node
	electing      bool
	proposed      bool   // we have proposed in this election
	lastPaxos     string // paxos state at the previous tick (progress check)
	nicknames     map[mesh.PeerName]string
	owned         map[string][]address.CIDR // ident -> addresses
	pending       []*op
	tentative     map[address.Address]*takeover // token -> acks still needed
	mine          []address.Range               // ring ranges our space was built from
	shutdown      bool
	shutdownState string        // the status line after weave reset: what was handed over
	requested     bool          // an allocation, claim or prime was asked of us
	lastError     error         // last ring merge failure, shown in status
	lastErrorFrom mesh.PeerName // the peer whose ring caused it
	lastSaved     string
	// lastRingTo rate-limits unconditional replies to unicast ring updates.
	lastRingTo map[mesh.PeerName]time.Time
	// orphans are addresses held here in space the ring gives to another
	// peer (heal.go); reclaimed is space we took over from dead peers,
	// allocated from last; conflictsSeen counts refused claim-backs.
	orphans       map[address.Address]*orphan
	reclaimed     []address.Range
	conflictsSeen uint64
}

// New validates cfg, applies defaults, and restores persisted state.
func New(cfg Config) (*Allocator, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u := cfg.Universe.Range()
	a := &Allocator{
		cfg:        cfg,
		log:        cfg.Logger.With("component", "ipam"),
		actions:    make(chan func()),
		ring:       ring.New(u.Start, u.End, cfg.OurName),
		space:      space.New(),
		nicknames:  map[mesh.PeerName]string{cfg.OurName: cfg.OurNickname},
		owned:      map[string][]address.CIDR{},
		tentative:  map[address.Address]*takeover{},
		lastRingTo: map[mesh.PeerName]time.Time{},
		orphans:    map[address.Address]*orphan{},
	}
	a.lifecycle.quit = make(chan struct{})
	a.lifecycle.done = make(chan struct{})
	switch cfg.Init.Mode {
	case InitObserver:
		a.paxos = paxos.NewObserver(cfg.OurName, cfg.OurUID)
	default:
		a.paxos = paxos.NewNode(cfg.OurName, cfg.OurUID, cfg.Init.Quorum)
	}
	if err := a.restore(); err != nil {
		return nil, err
	}
	return a, nil
}

// SetGossip gives the allocator its sending side (the mesh channel, or an
// in-memory transport in tests). Call before Start.
func (a *Allocator) SetGossip(g mesh.Gossip) {
	a.gossipMu.Lock()
	a.gossip = g
	a.gossipMu.Unlock()
}

func (a *Allocator) sender() mesh.Gossip {
	a.gossipMu.Lock()
	defer a.gossipMu.Unlock()
	return a.gossip
}

// Gossiper returns the receiving side to register on the "IPallocation"
// mesh channel.
func (a *Allocator) Gossiper() mesh.Gossiper { return a }

// Start runs the actor goroutine. Calling it twice is a no-op.
func (a *Allocator) Start() {
	l := &a.lifecycle
	l.Lock()
	defer l.Unlock()
	if l.started || l.stopped {
		return
	}
	l.started = true
	tick, stopTick := a.cfg.Clock.NewTicker(a.cfg.TickInterval)
	go a.run(tick, stopTick)
}

// Stop ends the actor, failing pending operations with ErrStopped, and
// waits for it. Idempotent.
func (a *Allocator) Stop() {
	l := &a.lifecycle
	l.Lock()
	if l.stopped {
		l.Unlock()
		<-l.done
		return
	}
	l.stopped = true
	started := l.started
	close(l.quit)
	l.Unlock()
	if !started {
		close(l.done)
		return
	}
	<-l.done
}

func (a *Allocator) run(tick <-chan time.Time, stopTick func()) {
	defer close(a.lifecycle.done)
	defer stopTick()
	for {
		select {
		case f := <-a.actions:
			f()
		case <-tick:
			a.onTick()
		case <-a.lifecycle.quit:
			for _, o := range a.pending {
				o.finish(address.CIDR{}, ErrStopped)
			}
			a.pending = nil
			return
		}
		a.afterAction()
	}
}

// do runs f on the actor and waits for it.
func (a *Allocator) do(f func()) error {
	done := make(chan struct{})
	select {
	case a.actions <- func() { f(); close(done) }:
	case <-a.lifecycle.quit:
		return ErrStopped
	}
	<-done
	return nil
}

// afterAction keeps the ring's free counts current, persists, retries
// pending operations and (in tests) checks invariants.
func (a *Allocator) afterAction() {
	a.tryPending()
	a.checkOrphans()
	if !a.ring.Empty() && a.ring.ReportFree(a.freeIn) {
		a.broadcast()
	}
	a.persist()
	if a.cfg.CheckInvariants {
		if err := a.checkInvariants(); err != nil {
			panic(fmt.Sprintf("ipam %s: %v", a.cfg.OurName, err))
		}
	}
}

// freeIn counts free addresses we hold in r, tentative takeovers included
// (they are unused until confirmed).
func (a *Allocator) freeIn(r address.Range) address.Count {
	n := a.space.NumFreeAddressesInRange(r)
	for _, t := range a.tentative {
		n += address.Count(t.rng.Intersect(r).Size())
	}
	return n
}

func (a *Allocator) checkInvariants() error {
	if err := a.ring.CheckInvariants(); err != nil {
		return err
	}
	if err := a.space.CheckInvariants(); err != nil {
		return err
	}
	for _, fr := range a.space.FreeRanges() {
		for x := fr.Start; x < fr.End; x = nextOwnerBoundary(a.ring, x, fr.End) {
			if o := a.ring.Owner(x); o != a.cfg.OurName {
				return fmt.Errorf("free space at %s is owned by %s in our ring", x, o)
			}
		}
	}
	return nil
}

func nextOwnerBoundary(r *ring.Ring, x, end address.Address) address.Address {
	for _, e := range r.AllEntries() {
		if e.Token > x && e.Token < end {
			return e.Token
		}
	}
	return end
}

// NoContainerID is the ident for an allocation that belongs to no
// container yet (the Docker IPAM driver's RequestAddress): every Allocate
// with it returns a new address, recorded under the address's own text
// (as Weave 2.8.1 files it), so Free(addr.String(), addr) releases it.
const NoContainerID = "_"

// Universe is the allocation range (--ipalloc-range).
func (a *Allocator) Universe() address.CIDR { return a.cfg.Universe }

// DefaultSubnet is the subnet used when none is asked for.
func (a *Allocator) DefaultSubnet() address.CIDR { return a.cfg.DefaultSubnet }

// Allocate returns an address for ident in subnet (idempotent per ident),
// waiting for consensus or for space from other peers for a bounded time.
func (a *Allocator) Allocate(ctx context.Context, ident string, subnet address.CIDR) (address.CIDR, error) {
	if err := checkIdent(ident); err != nil {
		return address.CIDR{}, err
	}
	if err := checkSubnet(subnet); err != nil {
		return address.CIDR{}, err
	}
	if !subnet.Range().Overlaps(a.cfg.Universe.Range()) {
		return address.CIDR{}, fmt.Errorf("allocate in %s: %w %s", subnet, ErrSubnetNotInRange, a.cfg.Universe)
	}
	return a.submit(ctx, &op{kind: opAllocate, ident: ident, subnet: subnet})
}

// Claim records that ident uses addr (e.g. a static or pre-existing address).
// Addresses outside the range are just recorded. With noErrorOnUnknown, a
// claim made before the ring exists succeeds at once and is checked later.
func (a *Allocator) Claim(ctx context.Context, ident string, addr address.CIDR, noErrorOnUnknown bool) error {
	if err := checkIdent(ident); err != nil {
		return err
	}
	if err := checkHostAddress(addr); err != nil {
		return fmt.Errorf("claim %s for %s: %w", addr, ident, err)
	}
	_, err := a.submit(ctx, &op{kind: opClaim, ident: ident, subnet: addr, noErrorOnUnknown: noErrorOnUnknown})
	return err
}

// Prime waits until the ring exists (GET /ring, `weave prime`).
func (a *Allocator) Prime(ctx context.Context) error {
	_, err := a.submit(ctx, &op{kind: opPrime})
	return err
}

func (a *Allocator) submit(ctx context.Context, o *op) (address.CIDR, error) {
	o.result = make(chan opResult, 1)
	if err := a.do(func() { a.start(o) }); err != nil {
		return address.CIDR{}, err
	}
	select {
	case r := <-o.result:
		return r.addr, r.err
	case <-ctx.Done():
		_ = a.do(func() { a.cancel(o) })
		select {
		case r := <-o.result: // finished before the cancel landed
			return r.addr, r.err
		default:
		}
		return address.CIDR{}, fmt.Errorf("%s %s: %w", o.kind, o.ident, ctx.Err())
	}
}

// Lookup returns ident's addresses inside subnet.
func (a *Allocator) Lookup(ident string, subnet address.CIDR) ([]address.CIDR, error) {
	var out []address.CIDR
	err := a.do(func() {
		for _, c := range a.owned[ident] {
			if subnet.Range().Contains(c.Addr) {
				out = append(out, c)
			}
		}
	})
	return out, err
}

// Free releases one address of ident.
func (a *Allocator) Free(ident string, addr address.Address) error {
	var err error
	if e := a.do(func() { err = a.free(ident, addr) }); e != nil {
		return e
	}
	return err
}

// Delete releases every address of ident (container destroyed). With
// nothing held it says so, in 2.8.1's words ("Delete: no addresses for
// X"), after cancelling ident's pending operations all the same.
func (a *Allocator) Delete(ident string) error {
	var err error
	if e := a.do(func() {
		if len(a.owned[ident]) == 0 {
			err = fmt.Errorf("Delete: %w for %s", ErrNoAddresses, ident)
		}
		for _, c := range a.owned[ident] {
			err = errors.Join(err, a.free(ident, c.Addr))
		}
		a.cancelIdent(ident)
	}); e != nil {
		return e
	}
	return err
}

// Prune releases the addresses of every ident for which alive returns
// false (dead-container cleanup at start or after container events).
func (a *Allocator) Prune(alive func(ident string) bool) (released int, err error) {
	e := a.do(func() {
		for ident, cs := range a.owned {
			if alive(ident) {
				continue
			}
			for _, c := range cs {
				if a.free(ident, c.Addr) == nil {
					released++
				}
			}
			a.cancelIdent(ident)
		}
	})
	return released, e
}

// Owned returns a copy of every ident's addresses.
func (a *Allocator) Owned() (map[string][]address.CIDR, error) {
	out := map[string][]address.CIDR{}
	err := a.do(func() {
		for k, v := range a.owned {
			out[k] = append([]address.CIDR(nil), v...)
		}
	})
	return out, err
}

func (a *Allocator) free(ident string, addr address.Address) error {
	cs := a.owned[ident]
	for i, c := range cs {
		if c.Addr != addr {
			continue
		}
		a.owned[ident] = append(cs[:i:i], cs[i+1:]...)
		if len(a.owned[ident]) == 0 {
			delete(a.owned, ident)
		}
		if a.space.IsAllocated(addr) {
			return a.space.Free(addr)
		}
		return nil
	}
	return fmt.Errorf("%s %w by %s", addr, ErrNotHeld, ident)
}

// checkHostAddress refuses the network and broadcast addresses of a
// subnet of more than two addresses: no container can use them.
func checkHostAddress(c address.CIDR) error {
	if c.PrefixLen >= 31 {
		return nil
	}
	switch c.Addr {
	case c.Start():
		return fmt.Errorf("%w: %s is the network address of %s", errBadRequest, c.Addr, c.Network())
	case c.Range().End - 1:
		return fmt.Errorf("%w: %s is the broadcast address of %s", errBadRequest, c.Addr, c.Network())
	}
	return nil
}

// safeIdentPath refuses idents that are relative paths or dot names
// ("..", "a/b", "/x/../y"); an absolute clean path is fine, `weave attach
// /path/to/netns` uses it as the ident.
func safeIdentPath(ident string) bool {
	if strings.ContainsRune(ident, '\\') {
		return false
	}
	if !strings.Contains(ident, "/") {
		return ident != "." && ident != ".."
	}
	return strings.HasPrefix(ident, "/") && path.Clean(ident) == ident
}

func checkIdent(ident string) error {
	if ident == "" || len(ident) > 256 {
		return fmt.Errorf("check container ID %q: %w: must be 1-256 bytes", ident, ErrBadIdent)
	}
	if !safeIdentPath(ident) {
		return fmt.Errorf("check container ID %q: %w: not a name, ID or absolute namespace path", ident, ErrBadIdent)
	}
	for _, c := range ident {
		if c < ' ' || c == 0x7f || c == utf8.RuneError {
			return fmt.Errorf("check container ID %q: %w: contains %q", ident, ErrBadIdent, c)
		}
	}
	return nil
}
