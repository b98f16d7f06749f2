package router

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/weaveworks/mesh"
)

// subState is the switch's view of one sub-forwarder.
type subState struct {
	alive       bool // prepared and not failed
	established bool
	onHold      bool
}

// SwitchForwarder is the mesh.OverlayConnection the OverlaySwitch returns
// for one mesh connection. It holds one sub-forwarder per common overlay
// (index = position in the common list, our order) and forwards over the
// best one.
//
// Lifecycle: PrepareConnection -> Confirm (sub-forwarders confirmed, one
// monitor goroutine per sub-forwarder started, registered for the hot path)
// -> Stop (monitors joined, sub-forwarders stopped, unregistered).
type SwitchForwarder struct {
	sw      *OverlaySwitch
	peer    mesh.PeerName
	peerStr string
	compat  bool        // legacy peer: one sleeve sub, raw control tags
	names   []string    // overlay display names, aligned with subs
	subs    []Forwarder // nil where the overlay failed to prepare

	// order is the hot-path candidate list: best first, then the later
	// working sub-forwarders. Immutable once published.
	order atomic.Pointer[[]Forwarder]

	mu          sync.Mutex
	state       []subState
	reasons     []string // why a sub-forwarder failed to prepare or failed
	best        int
	confirmed   bool
	stopped     bool
	established bool

	establishedCh chan struct{}
	errCh         chan error
	stopCh        chan struct{}
	wg            sync.WaitGroup
}

var _ Forwarder = (*SwitchForwarder)(nil)

func newSwitchForwarder(sw *OverlaySwitch, peer mesh.PeerName, peerStr string, names []string, subs []Forwarder, compat bool) *SwitchForwarder {
	f := &SwitchForwarder{
		sw: sw, peer: peer, peerStr: peerStr, compat: compat, names: names, subs: subs,
		state:         make([]subState, len(subs)),
		reasons:       make([]string, len(subs)),
		best:          -1,
		establishedCh: make(chan struct{}),
		errCh:         make(chan error, 1),
		stopCh:        make(chan struct{}),
	}
	for i, s := range subs {
		f.state[i].alive = s != nil
	}
	return f
}

// Confirm implements mesh.OverlayConnection.
func (f *SwitchForwarder) Confirm() {
	f.mu.Lock()
	if f.confirmed || f.stopped {
		f.mu.Unlock()
		return
	}
	f.confirmed = true
	var live []int
	for i, s := range f.subs {
		if s != nil {
			live = append(live, i)
		}
	}
	f.wg.Add(len(live))
	f.chooseBestLocked()
	f.sw.register(f)
	f.mu.Unlock()
	for _, i := range live {
		f.subs[i].Confirm()
		go f.monitor(i, f.subs[i])
	}
}

// monitor translates one sub-forwarder's events into switch state.
func (f *SwitchForwarder) monitor(i int, fwd Forwarder) {
	defer f.wg.Done()
	est, errc := fwd.EstablishedChannel(), fwd.ErrorChannel()
	var health <-chan bool
	if h, ok := fwd.(HealthNotifier); ok {
		health = h.HealthChannel()
	}
	for {
		select {
		case <-f.stopCh:
			return
		case <-est:
			est = nil
			f.update(i, func(s *subState) { s.established = true })
		case h, ok := <-health:
			if !ok {
				health = nil
				continue
			}
			f.update(i, func(s *subState) { s.onHold = !h })
		case err, ok := <-errc:
			if !ok {
				err = errors.New("error channel closed")
			}
			f.subFailed(i, err)
			return
		}
	}
}

func (f *SwitchForwarder) update(i int, change func(*subState)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.state[i])
	f.chooseBestLocked()
}

func (f *SwitchForwarder) subFailed(i int, err error) {
	f.sw.log.Warn("overlay forwarder failed", "overlay", f.names[i], "peer", f.peerStr, "err", err)
	f.mu.Lock()
	f.state[i].alive = false
	f.reasons[i] = err.Error()
	f.chooseBestLocked()
	none := f.best < 0 && !f.stopped
	f.mu.Unlock()
	f.subs[i].Stop()
	if none {
		select {
		case f.errCh <- fmt.Errorf("no working forwarders to %s: %w", f.peerStr, err):
		default:
		}
	}
}

// chooseBestLocked picks the first established sub-forwarder that is not
// on hold, else the first working one, and publishes the hot-path order.
func (f *SwitchForwarder) chooseBestLocked() {
	best := -1
	for i, s := range f.state {
		if s.alive && s.established && !s.onHold {
			best = i
			break
		}
	}
	if best < 0 {
		for i, s := range f.state {
			if s.alive {
				best = i
				break
			}
		}
	}
	for _, s := range f.state {
		if s.alive && s.established && !f.established {
			f.established = true
			close(f.establishedCh)
		}
	}
	if best != f.best && best >= 0 {
		f.sw.log.Info("using overlay", "overlay", f.names[best], "peer", f.peerStr)
	}
	f.best = best
	order := []Forwarder{}
	if best >= 0 {
		order = append(order, f.subs[best])
		for j := best + 1; j < len(f.subs); j++ {
			if f.state[j].alive {
				order = append(order, f.subs[j])
			}
		}
	}
	f.order.Store(&order)
}

// Forward implements Forwarder: it tries the best sub-forwarder, then the
// later ones while they return ErrCannotForward.
func (f *SwitchForwarder) Forward(srcPeer, dstPeer mesh.PeerName, frame []byte) error {
	order := f.order.Load()
	if order == nil {
		return ErrCannotForward
	}
	for _, fwd := range *order {
		err := fwd.Forward(srcPeer, dstPeer, frame)
		if err != ErrCannotForward { //nolint:errorlint // sentinel compared on the hot path
			return err
		}
	}
	return ErrCannotForward
}

// EstablishedChannel implements mesh.OverlayConnection: closed once any
// sub-forwarder is established.
func (f *SwitchForwarder) EstablishedChannel() <-chan struct{} { return f.establishedCh }

// ErrorChannel implements mesh.OverlayConnection: receives an error once
// no sub-forwarder is left.
func (f *SwitchForwarder) ErrorChannel() <-chan error { return f.errCh }

// Stop implements mesh.OverlayConnection. Idempotent.
func (f *SwitchForwarder) Stop() {
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return
	}
	f.stopped = true
	close(f.stopCh)
	f.mu.Unlock()
	f.wg.Wait()
	f.sw.unregister(f)
	for i, s := range f.subs {
		if s != nil && f.isAlive(i) {
			s.Stop()
		}
	}
}

func (f *SwitchForwarder) isAlive(i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state[i].alive
}

// ControlMessage implements mesh.OverlayConnection. In compat mode the
// message goes to the sleeve sub-forwarder as is; otherwise it must be
// tag 7 with payload [index][tag][body...]. Malformed messages are logged
// and ignored.
func (f *SwitchForwarder) ControlMessage(tag byte, msg []byte) {
	if f.compat {
		f.subs[0].ControlMessage(tag, msg)
		return
	}
	if tag != mesh.ProtocolOverlayControlMsg || len(msg) < 2 || int(msg[0]) >= len(f.subs) {
		f.sw.log.Warn("ignoring malformed overlay control message", "peer", f.peerStr, "tag", tag, "len", len(msg))
		return
	}
	i := int(msg[0])
	if f.subs[i] == nil || !f.isAlive(i) {
		f.sw.log.Debug("ignoring control message for inactive overlay", "peer", f.peerStr, "overlay", f.names[i])
		return
	}
	f.subs[i].ControlMessage(msg[1], msg[2:])
}

// FallbackReasoner may be implemented by a Forwarder that can explain
// why it is not in use (e.g. fastdp: "UDP 6784 blocked"). It returns ""
// when the forwarder is usable.
type FallbackReasoner interface {
	FallbackReason() string
}

// FallbackAttr is the Attrs key naming why a preferred overlay is not the
// one in use: "<overlay>(<reason>)". The parentheses keep the reason
// readable in Weave's status text, which joins attrs with no separator.
const FallbackAttr = "fallback"

// Attrs implements mesh.OverlayConnection: the best sub-forwarder's attrs,
// plus FallbackAttr when a preferred overlay is not the one in use.
func (f *SwitchForwarder) Attrs() map[string]any {
	f.mu.Lock()
	best := f.best
	fallback := f.fallbackLocked(best)
	f.mu.Unlock()
	if best < 0 {
		return nil
	}
	attrs := f.subs[best].Attrs()
	if fallback == "" {
		return attrs
	}
	out := make(map[string]any, len(attrs)+1)
	for k, v := range attrs {
		out[k] = v
	}
	out[FallbackAttr] = fallback
	return out
}

// fallbackLocked explains why the first overlay before best is not used.
func (f *SwitchForwarder) fallbackLocked(best int) string {
	for i := 0; i < best; i++ {
		reason := f.reasons[i]
		if reason == "" && f.subs[i] != nil {
			if r, ok := f.subs[i].(FallbackReasoner); ok {
				reason = r.FallbackReason()
			}
		}
		if reason == "" {
			switch {
			case f.state[i].onHold:
				reason = "on hold"
			case !f.state[i].established:
				reason = "not established"
			}
		}
		if reason != "" {
			return f.names[i] + "(" + reason + ")"
		}
	}
	return ""
}

// Peer returns the remote peer's name.
func (f *SwitchForwarder) Peer() mesh.PeerName { return f.peer }
