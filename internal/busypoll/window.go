// Package busypoll is the bounded busy-poll window that the capture loop
// and the sleeve receive loop share: after the last frame, instead of
// sleeping in the netpoller at once (a cold wake-up of 50 to 70 us for the
// next frame on an idle VM), a loop polls its own socket and its peer's for
// up to a window, restarted by every frame either finds. Only one loop of a
// pair spins at a time, and only after an idle gap, so busy links never
// spin (docs/performance.md, "Latency experiments").
package busypoll

import (
	"sync/atomic"
	"time"
)

// Window is one receive loop's busy-poll state. The zero value is off.
type Window struct {
	d    atomic.Int64                // window in ns; <= 0 is off
	last int64                       // when the loop last went to sleep (UnixNano); only its own goroutine uses it
	tok  atomic.Pointer[atomic.Bool] // held by the one loop of the pair that spins
	peer atomic.Pointer[func() bool] // the other loop's PollOnce, or nil
	// woke is when the loop last woke from the netpoller (Woke; 0: the loop
	// does not call Woke) and wokeIdle whether that sleep lasted MinIdleGap
	// or more. Only the loop's own goroutine uses them.
	woke     int64
	wokeIdle bool
}

// MaxSpinStreak bounds how long after its wake-up a burst may still be
// polled: a request and its reply fit well within it, while steady traffic
// that began after a pause goes back to sleeping and waking after it,
// instead of keeping the loop spinning (and a core busy) for as long as
// frames keep coming.
const MaxSpinStreak = time.Millisecond

// Woke tells the window that the loop has just woken from the netpoller (a
// burst begins). A loop that calls it spins only within MaxSpinStreak of a
// wake-up that followed a sleep of MinIdleGap or more; without it, the gap
// is measured from the last sleep to the end of the burst.
func (b *Window) Woke() {
	now := time.Now().UnixNano()
	b.wokeIdle = now-b.last >= int64(MinIdleGap)
	b.woke = now
}

// MinIdleGap: a loop spins only after a burst that followed at least this
// long a pause. That is where a cold wake-up would follow (a ping, a
// request); on a busy link the next frame comes soon anyway, and spinning
// there would only take CPU from the applications.
const MinIdleGap = time.Millisecond

// Set sets the window d (<= 0: off), the peer loop's non-blocking poll
// (reports whether it did work; nil: none) and the token shared with the
// peer loop (nil: not shared).
func (b *Window) Set(d time.Duration, peer func() bool, tok *atomic.Bool) {
	b.tok.Store(tok)
	if peer == nil {
		b.peer.Store(nil)
	} else {
		b.peer.Store(&peer)
	}
	b.d.Store(int64(d))
}

// Spin polls own and the peer until own has a frame (true), or the window
// passes without work, or stop is set (false).
func (b *Window) Spin(own func() bool, stop *atomic.Bool) (more bool) {
	d := time.Duration(b.d.Load())
	if d <= 0 {
		return false
	}
	now := time.Now()
	idle := now.UnixNano()-b.last >= int64(MinIdleGap)
	if b.woke != 0 {
		idle = b.wokeIdle && now.UnixNano()-b.woke < int64(MaxSpinStreak)
	}
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
