package sleeve

import (
	"sync/atomic"
	"time"
)

// busyPoll is the bounded busy-poll window of the receive loop: after the
// last datagram, instead of sleeping in the netpoller at once (a cold
// wake-up of 50 to 70 us for the next one on an idle VM), the loop polls
// its own socket and a peer's (the capture socket) for up to d, restarted
// by every frame either finds.
type busyPoll struct {
	d    atomic.Int64                // window in ns; <= 0 is off
	last int64                       // when the loop last went to sleep (UnixNano); only its own goroutine uses it
	tok  atomic.Pointer[atomic.Bool] // held by the one loop of the pair that spins
	peer atomic.Pointer[func() bool] // the capture loop's PollOnce, or nil
}

// minIdleGap: a loop spins only after a burst that followed at least this
// long a pause. That is where a cold wake-up would follow (a ping, a
// request); on a busy link the next frame comes soon anyway, and spinning
// there would only take CPU from the applications.
const minIdleGap = time.Millisecond

func (b *busyPoll) set(d time.Duration, peer func() bool, tok *atomic.Bool) {
	b.tok.Store(tok)
	if peer == nil {
		b.peer.Store(nil)
	} else {
		b.peer.Store(&peer)
	}
	b.d.Store(int64(d))
}

// spin polls own and the peer until own has a datagram (true), or the
// window passes without work, or stop is set (false).
func (b *busyPoll) spin(own func() bool, stop *atomic.Bool) (more bool) {
	d := time.Duration(b.d.Load())
	if d <= 0 {
		return false
	}
	now := time.Now()
	idle := now.UnixNano()-b.last >= int64(minIdleGap)
	defer func() {
		if !more { // the loop goes to sleep
			b.last = time.Now().UnixNano()
		}
	}()
	if !idle {
		return false
	}
	if tok := b.tok.Load(); tok != nil {
		if !tok.CompareAndSwap(false, true) {
			return false // the peer loop spins, and polls our socket too
		}
		defer tok.Store(false)
	}
	var peer func() bool
	if p := b.peer.Load(); p != nil {
		peer = *p
	}
	deadline := now.Add(d)
	for !stop.Load() {
		if own() {
			return true
		}
		if peer != nil && peer() {
			deadline = time.Now().Add(d)
			continue
		}
		if time.Now().After(deadline) {
			return false
		}
	}
	return false
}

// SetBusyPoll makes the receive loop, once no datagram is waiting, keep
// polling for up to d (calling peer, e.g. the capture socket's PollOnce,
// and reading its own socket without blocking) before it sleeps in the
// netpoller. peer reports whether it did some work, which restarts the d
// window. tok, when not nil, is shared with the peer loop: only the loop
// holding it spins, since either one polls both sockets. d <= 0 turns
// busy-polling off (the default).
func (o *Overlay) SetBusyPoll(d time.Duration, peer func() bool, tok *atomic.Bool) {
	o.busy.set(d, peer, tok)
}

// PollOnce handles one received datagram, if one is waiting and the
// receive loop is not handling one right now, on the caller's goroutine.
// It never blocks and reports whether it handled a datagram. The capture
// loop calls it after forwarding a frame, so that the peer's reply skips
// the receive goroutine's wake-up.
func (o *Overlay) PollOnce() bool { return o.pollOwn() }

// pollOwn receives and handles at most one datagram, unless another
// goroutine holds the rx lock. RawConn.Control keeps the socket open
// meanwhile.
func (o *Overlay) pollOwn() bool {
	if o.closed.Load() || !o.rx.TryLock() {
		return false
	}
	defer o.rx.Unlock()
	o.rx.polled = false
	_ = o.raw.Control(o.pollCtl)
	return o.rx.polled
}

// pollFD is pollOwn's Control callback; o.rx is held.
func (o *Overlay) pollFD(fd uintptr) { o.rx.polled = o.receiveLocked(int(fd)) }
