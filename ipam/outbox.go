package ipam

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/weaveworks/mesh"
)

// Outbox is a mesh.Gossip that never blocks the allocator. mesh sends a
// unicast on the caller's goroutine, straight into the TCP connection to
// the next hop, and a broadcast first waits for a pending route
// calculation; the allocator's actor, blocked in such a send, stops
// answering the mesh receive loops that hand it messages, and those then
// stop reading their connections. At 200 peers that wait went round the
// mesh: donations took 40-50 s. The Outbox queues instead and sends from
// its own goroutine. What it queues is the latest word: a newer ring
// update to a peer replaces one not yet sent (each carries our whole
// state), as does a newer broadcast; space requests and denials keep their
// order. Past outboxLimit messages new ones are dropped (the allocator
// retries on its tick).
type Outbox struct {
	g   mesh.Gossip
	log *slog.Logger

	mu      sync.Mutex
	queue   []outMsg
	ringAt  map[mesh.PeerName]int // index in queue of an unsent ring update
	bcast   mesh.GossipData       // latest broadcast not yet sent
	dropped uint64
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

type outMsg struct {
	dst mesh.PeerName
	msg []byte
}

// outboxLimit bounds the queued unicasts (a ring update is a few KB).
const outboxLimit = 1024

var _ mesh.Gossip = (*Outbox)(nil)

// NewOutbox starts an outbox sending through g; Close stops it.
func NewOutbox(g mesh.Gossip, log *slog.Logger) *Outbox {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := &Outbox{g: g, log: log, ringAt: map[mesh.PeerName]int{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go o.run()
	return o
}

// GossipUnicast queues msg for dst. It fails only when the queue is full.
func (o *Outbox) GossipUnicast(dst mesh.PeerName, msg []byte) error {
	ring := len(msg) > 0 && msg[0] == msgRingUpdate
	o.mu.Lock()
	if i, ok := o.ringAt[dst]; ring && ok {
		o.queue[i].msg = msg
		o.mu.Unlock()
		return nil
	}
	if len(o.queue) >= outboxLimit {
		o.dropped++
		o.mu.Unlock()
		return errOutboxFull
	}
	if ring {
		o.ringAt[dst] = len(o.queue)
	}
	o.queue = append(o.queue, outMsg{dst: dst, msg: msg})
	o.mu.Unlock()
	o.poke()
	return nil
}

// GossipBroadcast queues d, replacing a broadcast not yet sent.
func (o *Outbox) GossipBroadcast(d mesh.GossipData) {
	o.mu.Lock()
	o.bcast = d
	o.mu.Unlock()
	o.poke()
}

// GossipNeighbourSubset is passed through: mesh only queues it.
func (o *Outbox) GossipNeighbourSubset(d mesh.GossipData) { o.g.GossipNeighbourSubset(d) }

// Dropped is how many unicasts a full queue refused.
func (o *Outbox) Dropped() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.dropped
}

// Close sends what is queued (a shutdown's hand-over broadcast must go
// out), waiting at most closeWait for it, and stops. Idempotent.
func (o *Outbox) Close() {
	o.once.Do(func() { close(o.stop) })
	select {
	case <-o.done:
	case <-time.After(closeWait):
		o.log.Warn("IPAM messages still unsent at shutdown", "waited", closeWait)
	}
}

// closeWait bounds Close's wait for the last sends (a connection whose
// peer stopped reading blocks its writer until mesh closes it).
const closeWait = 2 * time.Second

var errOutboxFull = fmt.Errorf("IPAM send queue full (%d messages): dropped", outboxLimit)

func (o *Outbox) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *Outbox) run() {
	defer close(o.done)
	for {
		stopping := false
		select {
		case <-o.stop:
			stopping = true
		case <-o.wake:
		}
		o.flush()
		if stopping {
			return
		}
	}
}

func (o *Outbox) flush() {
	o.mu.Lock()
	queue, bcast := o.queue, o.bcast
	o.queue, o.bcast = nil, nil
	clear(o.ringAt)
	o.mu.Unlock()
	if bcast != nil {
		o.g.GossipBroadcast(bcast)
	}
	for _, m := range queue {
		if err := o.g.GossipUnicast(m.dst, m.msg); err != nil {
			o.log.Debug("IPAM unicast failed", "peer", m.dst, "err", err)
		}
	}
}
