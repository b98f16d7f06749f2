package sleeve

import (
	"sync/atomic"
	"time"
)

// SetBusyPoll makes the receive loop, once no datagram is waiting, keep
// polling for up to d (calling peer, e.g. the capture socket's PollOnce,
// and reading its own socket without blocking) before it sleeps in the
// netpoller. peer reports whether it did some work, which restarts the d
// window. tok, when not nil, is shared with the peer loop: only the loop
// holding it spins, since either one polls both sockets. d <= 0 turns
// busy-polling off (the default).
func (o *Overlay) SetBusyPoll(d time.Duration, peer func() bool, tok *atomic.Bool) {
	o.busy.Set(d, peer, tok)
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
	o.rx.batch.End() // nobody else may receive again soon
	return o.rx.polled
}

// pollFD is pollOwn's Control callback; o.rx is held.
func (o *Overlay) pollFD(fd uintptr) { o.rx.polled = o.receiveLocked(int(fd)) }
