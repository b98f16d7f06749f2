package router

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weaveworks/mesh"
)

// fakeFwd is a scriptable Forwarder.
type fakeFwd struct {
	overlay string
	params  mesh.OverlayConnectionParams
	est     chan struct{}
	errc    chan error
	health  chan bool

	forwardErr atomic.Pointer[error] // returned by Forward
	forwards   atomic.Int64
	lastSrc    atomic.Uint64
	lastDst    atomic.Uint64

	mu        sync.Mutex
	ctrl      []ctrlMsg
	confirmed bool
	stopped   int
	estOnce   sync.Once
}

type ctrlMsg struct {
	tag byte
	msg string
}

func newFakeFwd(overlay string, p mesh.OverlayConnectionParams) *fakeFwd {
	return &fakeFwd{overlay: overlay, params: p, est: make(chan struct{}), errc: make(chan error, 1), health: make(chan bool)}
}

func (f *fakeFwd) setErr(err error) { f.forwardErr.Store(&err) }
func (f *fakeFwd) establish()       { f.estOnce.Do(func() { close(f.est) }) }

func (f *fakeFwd) Forward(src, dst mesh.PeerName, frame []byte) error {
	f.forwards.Add(1)
	f.lastSrc.Store(uint64(src))
	f.lastDst.Store(uint64(dst))
	if e := f.forwardErr.Load(); e != nil {
		return *e
	}
	return nil
}

func (f *fakeFwd) Confirm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.confirmed = true
}
func (f *fakeFwd) EstablishedChannel() <-chan struct{} { return f.est }
func (f *fakeFwd) ErrorChannel() <-chan error          { return f.errc }
func (f *fakeFwd) HealthChannel() <-chan bool          { return f.health }
func (f *fakeFwd) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped++
}
func (f *fakeFwd) ControlMessage(tag byte, msg []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctrl = append(f.ctrl, ctrlMsg{tag, string(msg)})
}
func (f *fakeFwd) received() []ctrlMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ctrlMsg(nil), f.ctrl...)
}
func (f *fakeFwd) stopCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopped
}
func (f *fakeFwd) Attrs() map[string]any { return map[string]any{"name": f.overlay} }

// fakeOverlay hands out fakeFwds and remembers them.
type fakeOverlay struct {
	name    string
	prepErr error

	mu      sync.Mutex
	fwds    []*fakeFwd
	stopped int
}

var (
	_ Overlay        = (*fakeOverlay)(nil)
	_ Forwarder      = (*fakeFwd)(nil)
	_ HealthNotifier = (*fakeFwd)(nil)
)

func (o *fakeOverlay) Name() string { return o.name }
func (o *fakeOverlay) PrepareConnection(p mesh.OverlayConnectionParams) (Forwarder, error) {
	if o.prepErr != nil {
		return nil, o.prepErr
	}
	f := newFakeFwd(o.name, p)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fwds = append(o.fwds, f)
	return f, nil
}
func (o *fakeOverlay) Diagnostics() any { return "diag-" + o.name }
func (o *fakeOverlay) Stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped++
}
func (o *fakeOverlay) last() *fakeFwd {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.fwds) == 0 {
		return nil
	}
	return o.fwds[len(o.fwds)-1]
}

// eventually polls cond until it holds or fails the test after 5 s; used
// only where the switch's monitor goroutines offer no event to await.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// fakeInjector records injected frames.
type fakeInjector struct {
	mu     sync.Mutex
	frames [][]byte
	count  atomic.Int64
	record bool
}

func (i *fakeInjector) InjectFrame(frame []byte) error {
	i.count.Add(1)
	if !i.record {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.frames = append(i.frames, append([]byte(nil), frame...))
	return nil
}
func (i *fakeInjector) all() [][]byte {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([][]byte(nil), i.frames...)
}

// staticRoutes is a fixed routeTable.
type staticRoutes struct {
	unicast   map[mesh.PeerName]mesh.PeerName
	broadcast map[mesh.PeerName][]mesh.PeerName
}

func (s staticRoutes) Unicast(dst mesh.PeerName) (mesh.PeerName, bool) {
	h, ok := s.unicast[dst]
	return h, ok
}
func (s staticRoutes) Broadcast(src mesh.PeerName) []mesh.PeerName { return s.broadcast[src] }
