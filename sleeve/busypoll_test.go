package sleeve

import (
	"sync/atomic"
	"testing"
	"time"
)

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
