package sleeve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/seedf75a49c6/weave/internal/burst"
	"github.com/seedf75a49c6/weave/internal/busypoll"
	"github.com/seedf75a49c6/weave/router"
	"github.com/weaveworks/mesh"
)

// Timing holds the sleeve timers; zero fields take the defaults, which are
// Weave 2.8.1's values.
type Timing struct {
	FastHeartbeat     time.Duration // heartbeat period until acknowledged; default 500ms
	SlowHeartbeat     time.Duration // heartbeat period once established; default 10s
	HeartbeatTimeout  time.Duration // no heartbeat for this long => error; default 60s
	FragTestInterval  time.Duration // fragmentation test period; default 5m
	MTUVerifyTimeout  time.Duration // first MTU probe wait, doubled per retry; default 10ms
	MTUVerifyAttempts int           // probes per candidate MTU; default 8
	// FragTestRetry: towards a peer that offers jumbo framing, the
	// fragmentation test is re-sent this often until it passes, at most
	// fragTestRetries times (Weave sends it once per FragTestInterval, so
	// one lost datagram would delay jumbo framing by 5 minutes); default 1s.
	FragTestRetry time.Duration
}

// DefaultTiming returns Weave 2.8.1's sleeve timers.
func DefaultTiming() Timing {
	return Timing{
		FastHeartbeat:     500 * time.Millisecond,
		SlowHeartbeat:     10 * time.Second,
		HeartbeatTimeout:  60 * time.Second,
		FragTestInterval:  5 * time.Minute,
		MTUVerifyTimeout:  10 * time.Millisecond,
		MTUVerifyAttempts: 8,
		FragTestRetry:     time.Second,
	}
}

func (t Timing) withDefaults() Timing {
	d := DefaultTiming()
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	t.FastHeartbeat = pick(t.FastHeartbeat, d.FastHeartbeat)
	t.SlowHeartbeat = pick(t.SlowHeartbeat, d.SlowHeartbeat)
	t.HeartbeatTimeout = pick(t.HeartbeatTimeout, d.HeartbeatTimeout)
	t.FragTestInterval = pick(t.FragTestInterval, d.FragTestInterval)
	t.MTUVerifyTimeout = pick(t.MTUVerifyTimeout, d.MTUVerifyTimeout)
	t.FragTestRetry = pick(t.FragTestRetry, d.FragTestRetry)
	if t.MTUVerifyAttempts <= 0 {
		t.MTUVerifyAttempts = d.MTUVerifyAttempts
	}
	return t
}

// Config configures the sleeve overlay.
type Config struct {
	Host      string              // bind address for UDP; "" = all addresses
	Port      int                 // UDP port, the same number as the mesh TCP port (default 6783; 0 picks one, for tests)
	LocalPeer mesh.PeerName       // our peer name (datagram sender field)
	Handler   router.FrameHandler // receives decoded data frames (required)
	Logger    *slog.Logger        // nil: discard
	PktDebug  bool                // log every received datagram at debug level
	Timing    Timing              // zero fields = DefaultTiming()
	// NoJumbo stops us offering jumbo framing (see JumboFeature). Default
	// false: offered, and used towards peers that offer it too once the
	// fragmentation test has passed.
	NoJumbo bool
	// NoFastCipher stops us offering AEAD ciphers (see CipherFeature), so
	// encrypted links always use Weave's secretbox. Default false:
	// AES-256-GCM (where the CPU has AES instructions) and
	// ChaCha20-Poly1305 are offered and used towards peers that offer them.
	NoFastCipher bool
	// NoSegments stops us offering segmented framing (see SegmentsFeature);
	// jumbo framing (unless NoJumbo) is then what our routers use. Default
	// false: offered where the kernel has UDP GSO/GRO.
	NoSegments bool
}

// Overlay is the sleeve overlay; it implements router.Overlay.
type Overlay struct {
	cfg     Config
	log     *slog.Logger
	ciphers string // our CipherFeature offer; "" with NoFastCipher
	socks   *sockets
	socks6  *sockets // IPv6 pair beside an IPv4 primary (Host ""); nil when IPv6 is unavailable

	mu struct {
		sync.RWMutex
		byPeer map[mesh.PeerName]*forwarder // confirmed forwarders
		all    map[*forwarder]struct{}      // every prepared, unstopped forwarder
	}
	rxUnknown, rxGarbage, rxErrors atomic.Uint64

	// rx serialises "receive one datagram + handle it" between the receive
	// loop and PollOnce callers, so datagrams are handled in order, one at
	// a time (the receive crypto state needs that). It owns the buffers.
	rx struct {
		sync.Mutex
		buf, plain []byte
		polled     bool          // result of the last pollCtl
		msg        rxMsg         // recvmsg state (Linux)
		batch      burst.Bracket // the injector's batch (SetBatch)
	}
	busy    busypoll.Window
	batch   batchState            // send batching (batch.go)
	raw     syscall.RawConn       // of socks.main
	ownPoll func() bool           // bound once: pollOwn, for the busy-poll loop
	readFn  func(fd uintptr) bool // bound once: readAndHandle
	pollCtl func(fd uintptr)      // bound once: the RawConn.Control callback of pollOwn
	closed  atomic.Bool

	stopOnce sync.Once
	wg       sync.WaitGroup
}

var (
	_ router.Overlay      = (*Overlay)(nil)
	_ router.FeatureAdder = (*Overlay)(nil)
)

// New binds the UDP socket(s) and starts the receive loop.
func New(cfg Config) (*Overlay, error) {
	if cfg.Handler == nil {
		return nil, errors.New("new sleeve overlay: Config.Handler is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Timing = cfg.Timing.withDefaults()
	socks, err := openSockets(cfg.Host, cfg.Port)
	if err != nil {
		return nil, fmt.Errorf("open sleeve sockets on %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	o := &Overlay{cfg: cfg, log: cfg.Logger.With("overlay", "sleeve"), socks: socks}
	if !cfg.NoFastCipher {
		o.ciphers = offeredCiphers()
	}
	o.mu.byPeer = make(map[mesh.PeerName]*forwarder)
	o.mu.all = make(map[*forwarder]struct{})
	o.rx.buf, o.rx.plain = make([]byte, 65536), make([]byte, 65536)
	o.ownPoll, o.readFn, o.pollCtl = o.pollOwn, o.readAndHandle, o.pollFD
	if o.raw, err = socks.main.SyscallConn(); err != nil {
		socks.close()
		return nil, fmt.Errorf("get raw conn of sleeve socket: %w", err)
	}
	o.wg.Add(1)
	go o.receiveLoop()
	if cfg.Host == "" {
		o.openIPv6()
	}
	return o, nil
}

// openIPv6 opens the IPv6 pair on the primary's port, so peers reached
// over an IPv6 underlay get a sleeve data path. A host without IPv6
// (disabled, or the port taken there) keeps its IPv4 links and says why.
func (o *Overlay) openIPv6() {
	s6, err := openSockets("::", o.socks.port)
	if err != nil {
		o.log.Info("sleeve has no IPv6 socket; IPv6 underlay links will not get a data path", "err", err)
		return
	}
	raw, err := s6.main.SyscallConn()
	if err != nil {
		s6.close()
		o.log.Info("sleeve has no IPv6 socket; IPv6 underlay links will not get a data path", "err", err)
		return
	}
	o.socks6 = s6
	o.wg.Add(1)
	go o.receiveLoop6(raw)
}

// Name implements router.Overlay.
func (o *Overlay) Name() string { return "sleeve" }

// AddFeaturesTo implements router.FeatureAdder: it offers jumbo framing
// unless Config.NoJumbo, segmented framing unless Config.NoSegments or the
// kernel lacks UDP GSO/GRO, and AEAD ciphers unless Config.NoFastCipher.
func (o *Overlay) AddFeaturesTo(features map[string]string) {
	if !o.cfg.NoJumbo {
		features[JumboFeature] = "1"
	}
	if o.offersSegments() {
		features[SegmentsFeature] = "1"
	}
	if o.ciphers != "" {
		features[CipherFeature] = o.ciphers
	}
}

func (o *Overlay) offersSegments() bool { return !o.cfg.NoSegments && o.socks.gso }

// Port returns the bound UDP port (useful when Config.Port was 0).
func (o *Overlay) Port() int { return o.socks.port }

// PrepareConnection implements router.Overlay.
func (o *Overlay) PrepareConnection(p mesh.OverlayConnectionParams) (router.Forwarder, error) {
	if p.RemotePeer == nil {
		return nil, errors.New("prepare sleeve connection: no remote peer")
	}
	f, err := newForwarder(o, p)
	if err != nil {
		return nil, fmt.Errorf("prepare sleeve connection to %s: %w", p.RemotePeer.Name, err)
	}
	o.mu.Lock()
	o.mu.all[f] = struct{}{}
	o.mu.Unlock()
	return f, nil
}

func (o *Overlay) register(f *forwarder) {
	o.mu.Lock()
	o.mu.byPeer[f.remote] = f
	o.mu.Unlock()
}

func (o *Overlay) unregister(f *forwarder) {
	o.mu.Lock()
	if o.mu.byPeer[f.remote] == f {
		delete(o.mu.byPeer, f.remote)
	}
	delete(o.mu.all, f)
	o.mu.Unlock()
}

// Stop implements router.Overlay: it stops every forwarder, closes the
// sockets and joins the receive loop. Idempotent.
func (o *Overlay) Stop() {
	o.stopOnce.Do(func() {
		o.mu.RLock()
		fs := make([]*forwarder, 0, len(o.mu.all))
		for f := range o.mu.all {
			fs = append(fs, f)
		}
		o.mu.RUnlock()
		for _, f := range fs {
			f.Stop()
		}
		o.closed.Store(true)
		o.socks.close()
		if o.socks6 != nil {
			o.socks6.close()
		}
		o.wg.Wait()
	})
}

func (o *Overlay) handleDatagram(d []byte, from netip.AddrPort, plain []byte) {
	if len(d) < NameSize {
		o.rxGarbage.Add(1)
		return
	}
	sender := PeerNameAt(d)
	o.mu.RLock()
	f := o.mu.byPeer[sender]
	o.mu.RUnlock()
	if f == nil {
		o.rxUnknown.Add(1)
		return
	}
	if o.cfg.PktDebug && o.log.Enabled(context.Background(), slog.LevelDebug) {
		o.log.Debug("sleeve datagram", "peer", sender.String(), "from", from.String(), "len", len(d))
	}
	f.receive(d, from, plain)
}
