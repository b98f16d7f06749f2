package sleeve

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestBusyPollSpin checks the window rules: off, own work, peer work
// restarting the window, the idle-gap rule, the pair token, and stop.
func TestBusyPollSpin(t *testing.T) {
	var stop atomic.Bool
	never := func() bool { return false }
	var b busyPoll
	if b.spin(func() bool { t.Fatal("spun while off"); return false }, &stop) {
		t.Fatal("spin while off reported work")
	}

	b = busyPoll{}
	b.set(50*time.Millisecond, nil, nil)
	calls := 0
	if !b.spin(func() bool { calls++; return calls == 3 }, &stop) || calls != 3 {
		t.Fatalf("spin did not return own work: %d calls", calls)
	}

	b = busyPoll{}
	peerWork := 0
	b.set(2*time.Millisecond, func() bool { peerWork++; return peerWork <= 5 }, nil)
	start := time.Now()
	if b.spin(never, &stop) {
		t.Fatal("spin reported own work")
	}
	if peerWork <= 5 || time.Since(start) < 2*time.Millisecond {
		t.Fatalf("peer polled %d times in %v", peerWork, time.Since(start))
	}
	// Straight after going to sleep the loop is busy, not idle: no spin.
	if b.spin(func() bool { t.Fatal("spun within minIdleGap"); return false }, &stop) {
		t.Fatal("spin within minIdleGap reported work")
	}

	var tok atomic.Bool
	tok.Store(true)
	b = busyPoll{}
	b.set(time.Second, nil, &tok)
	if b.spin(func() bool { t.Fatal("spun without the token"); return false }, &stop) {
		t.Fatal("spin without the token reported work")
	}

	tok.Store(false)
	b = busyPoll{}
	b.set(time.Hour, nil, &tok)
	n := 0
	if b.spin(func() bool { n++; stop.Store(n == 10); return false }, &stop) {
		t.Fatal("stopped spin reported work")
	}
	if n != 10 || tok.Load() {
		t.Fatalf("stop: %d polls, token still held %v", n, tok.Load())
	}
}

// TestBusyPollLoopback runs a pair with B's receive loop busy-polling a
// peer after each datagram: every frame arrives, the peer is polled,
// and Stop ends a spin long before its window does.
func TestBusyPollLoopback(t *testing.T) {
	checkGoroutines(t)
	ha, hb := newFakeHandler(), newFakeHandler()
	oa := newTestOverlay(t, peerA, ha, fastTiming)
	ob := newTestOverlay(t, peerB, hb, fastTiming)
	var peerCalls atomic.Int64
	ob.SetBusyPoll(10*time.Second, func() bool { peerCalls.Add(1); return oa.PollOnce() }, nil)
	fa, fb := pair(t, oa, ob, &testKey)
	fa.Confirm()
	fb.Confirm()
	awaitClosed(t, fa.EstablishedChannel(), "A established")
	awaitClosed(t, fb.EstablishedChannel(), "B established")
	for i := range 20 {
		frame := ipv4Frame(100+i, true, 0)
		if err := fa.Forward(peerA, peerB, frame); err != nil {
			t.Fatalf("forward %d: %v", i, err)
		}
		if got := hb.await(t); len(got.frame) != len(frame) {
			t.Fatalf("frame %d: got %d bytes, want %d (out of order?)", i, len(got.frame), len(frame))
		}
	}
	if peerCalls.Load() == 0 {
		t.Fatal("B's receive loop never busy-polled its peer")
	}
	start := time.Now()
	ob.Stop()
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Stop took %v with a 10s busy-poll window", d)
	}
}
