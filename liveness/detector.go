package liveness

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Detector runs one memberlist and keeps the liveness of every peer that
// has ever joined it.
type Detector struct {
	cfg   Config
	ml    *memberlist.Memberlist
	tr    transport
	wake  chan struct{}
	stop  chan struct{}
	polls atomic.Uint64 // snapshots taken, for tests
	wg    sync.WaitGroup
	once  sync.Once

	mu       sync.Mutex
	table    statusTable
	suspects map[string]time.Time     // peers our prober suspects, until a ping succeeds
	rtts     map[string]time.Duration // smoothed round trip of our direct probes, by peer
}

// events wakes the poller as soon as memberlist reports a join or leave,
// so the recorded time is close to memberlist's own decision, and clears
// our suspicion of a peer that answered a probe.
type events struct{ d *Detector }

func (e events) NotifyJoin(*memberlist.Node) { e.d.poke() }
func (e events) NotifyLeave(n *memberlist.Node) {
	e.d.mu.Lock()
	delete(e.d.rtts, n.Name) // a returning peer starts a fresh average
	e.d.mu.Unlock()
	e.d.poke()
}
func (e events) NotifyUpdate(*memberlist.Node) { e.d.poke() }
func (e events) AckPayload() []byte            { return nil }

// NotifyPingComplete implements memberlist.PingDelegate: memberlist calls
// it when a direct probe of n was acked, with the probe's round trip.
func (e events) NotifyPingComplete(n *memberlist.Node, rtt time.Duration, _ []byte) {
	e.d.mu.Lock()
	e.d.recordRTT(n.Name, rtt)
	_, was := e.d.suspects[n.Name]
	delete(e.d.suspects, n.Name)
	e.d.mu.Unlock()
	if was {
		e.d.poke()
	}
}

// NotifyAlive implements memberlist.AliveDelegate: an alive message about
// a peer we suspect, arriving two probe intervals after we began to, is
// taken as its refutation (memberlist does not tell us the incarnation;
// earlier ones may still be retransmissions of the old alive message).
func (e events) NotifyAlive(n *memberlist.Node) error {
	d := e.d
	d.mu.Lock()
	at, ok := d.suspects[n.Name]
	refuted := ok && time.Since(at) > 2*d.cfg.Timing.ProbeInterval
	if refuted {
		delete(d.suspects, n.Name)
	}
	d.mu.Unlock()
	if refuted {
		d.poke()
	}
	return nil
}

// recordRTT folds one probe round trip into peer's smoothed RTT, as TCP
// smooths its RTT (RFC 6298: 7/8 old + 1/8 new), so one slow ack on a
// loaded host moves it little. d.mu must be held.
func (d *Detector) recordRTT(peer string, rtt time.Duration) {
	if rtt <= 0 {
		return
	}
	if old, ok := d.rtts[peer]; ok {
		rtt = old - old/8 + rtt/8
	}
	d.rtts[peer] = rtt
}

// RTT returns the smoothed round trip of our liveness probes to peer over
// the underlay (UDP ping to ack, memberlist's own measure), and false
// while no direct probe of peer has been acked since it joined.
func (d *Detector) RTT(peer string) (time.Duration, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rtt, ok := d.rtts[peer]
	return rtt, ok
}

// markSuspect records that our prober got no ack from peer.
func (d *Detector) markSuspect(peer string) {
	d.mu.Lock()
	d.suspects[peer] = time.Now()
	d.mu.Unlock()
	d.poke()
}

// New starts a detector listening on cfg.BindAddr:cfg.Port (UDP and TCP).
// It joins cfg.Seeds in the background; Close stops it.
func New(cfg Config) (*Detector, error) {
	cfg.fill()
	d := &Detector{
		cfg: cfg, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		table: newStatusTable(), suspects: make(map[string]time.Time),
		rtts: make(map[string]time.Duration),
	}
	mc, err := cfg.memberlistConfig(d)
	if err != nil {
		return nil, err
	}
	mc.TCPTimeout = 5 * time.Second
	if d.tr = cfg.tr; d.tr == nil {
		if d.tr, err = newCountingTransport(&d.cfg); err != nil {
			return nil, fmt.Errorf("start liveness: %w", err)
		}
	}
	mc.Transport = d.tr
	if d.ml, err = memberlist.Create(mc); err != nil {
		_ = d.tr.Shutdown()
		return nil, fmt.Errorf("start liveness on %s: %w", net.JoinHostPort(cfg.BindAddr, strconv.Itoa(cfg.Port)), err)
	}
	d.wg.Add(2)
	go d.pollLoop()
	go d.joinLoop()
	return d, nil
}

// Close leaves the cluster (peers see us dead at once instead of after a
// suspicion timeout) and stops. Idempotent.
func (d *Detector) Close() error {
	var err error
	d.once.Do(func() {
		close(d.stop)
		d.wg.Wait()
		_ = d.ml.Leave(time.Second)
		if e := d.ml.Shutdown(); e != nil {
			err = fmt.Errorf("stop liveness: %w", e)
		}
	})
	return err
}

// stopped reports whether Close or Kill was called.
func (d *Detector) stopped() bool {
	select {
	case <-d.stop:
		return true
	default:
		return false
	}
}

// Name returns our peer name.
func (d *Detector) Name() string { return d.cfg.Name }

// PacketBytesSent is how many bytes of UDP packets (probes, acks,
// gossip) we have sent.
func (d *Detector) PacketBytesSent() uint64 { return d.tr.bytesSent() }

// Port returns the port we listen on and join seeds at.
func (d *Detector) Port() int { return d.cfg.Port }

// Join joins the peers at addrs (host or host:port) now; it returns how
// many answered.
func (d *Detector) Join(addrs ...string) (int, error) {
	full := make([]string, len(addrs))
	for i, a := range addrs {
		full[i] = d.joinAddr(a)
	}
	n, err := d.ml.Join(full)
	d.poke()
	if err != nil {
		return n, fmt.Errorf("join liveness peers %v: %w", full, err)
	}
	return n, nil
}

func (d *Detector) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Detector) joinAddr(host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(d.cfg.Port))
}

// Get returns peer's status; State is Unknown for a peer never seen.
func (d *Detector) Get(peer string) Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.table.get(peer)
}

// Peers returns every peer ever seen (not us), sorted by name.
func (d *Detector) Peers() []Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.table.list()
}

// Transitions returns how many times a peer entered state s.
func (d *Detector) Transitions(s State) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.table.transitions(s)
}

// Await blocks until peer is in state s or ctx ends.
func (d *Detector) Await(ctx context.Context, peer string, s State) error {
	return await(ctx, peer, s, func() (State, chan struct{}) {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.table.get(peer).State, d.table.changed
	})
}

// await blocks until snap's state is s or ctx ends; snap returns the
// state and the channel closed at its next change, read together.
func await(ctx context.Context, peer string, s State, snap func() (State, chan struct{})) error {
	for {
		cur, ch := snap()
		if cur == s {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("await %s %s (is %s): %w", peer, s, cur, ctx.Err())
		}
	}
}

// Kill stops without leaving the cluster: to the others we vanish, as a
// SIGKILLed router does (tests and simulations). Idempotent with Close.
func (d *Detector) Kill() error {
	var err error
	d.once.Do(func() {
		close(d.stop)
		d.wg.Wait()
		if e := d.ml.Shutdown(); e != nil {
			err = fmt.Errorf("stop liveness: %w", e)
		}
	})
	return err
}
