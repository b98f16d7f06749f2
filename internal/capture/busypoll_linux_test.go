package capture

import (
	"bytes"
	"encoding/binary"
	"github.com/seedf75a49c6/weave/internal/busypoll"
	"sync/atomic"
	"testing"
	"time"
)

// TestBusyPollCrossHandlesInOrderAndClosesPromptly pairs two handles as
// the router pairs capture and sleeve: b, after each frame, spins polling
// a. Frames for a are handled in order whichever goroutine reads them, and
// Close stops a spin long before its window ends.
func TestBusyPollCrossHandlesInOrderAndClosesPromptly(t *testing.T) {
	nsPath, a, b := vethPair(t)
	ha, hb := openIn(t, nsPath, a), openIn(t, nsPath, b)
	framesA, _ := collector(t, ha)
	framesB := make(chan []byte, 8)
	doneB := make(chan error, 1)
	go func() {
		doneB <- hb.Run(func(frame []byte) {
			if len(frame) >= 14 && binary.BigEndian.Uint16(frame[12:14]) == testEtherType {
				framesB <- bytes.Clone(frame)
			}
		})
	}()
	t.Cleanup(func() { hb.Close(); <-doneB })
	var peerCalls atomic.Int64
	var tok atomic.Bool
	hb.SetBusyPoll(10*time.Second, func() bool { peerCalls.Add(1); return ha.PollOnce() }, &tok)

	// A loop spins only after a burst that follows an idle gap (the rule
	// under test is about time), so let hb's Run sit idle that long first:
	// otherwise X may arrive within the gap after Run's first sleep.
	time.Sleep(3 * busypoll.MinIdleGap)
	if err := ha.InjectFrame(testFrame('X', 0)); err != nil {
		t.Fatalf("inject on %s: %v", a, err)
	}
	await(t, framesB) // hb's Run handled it and now spins, polling ha
	const n = 50
	for i := range uint32(n) {
		if err := hb.InjectFrame(testFrame('Y', i)); err != nil {
			t.Fatalf("inject on %s: %v", b, err)
		}
	}
	for i := range uint32(n) {
		if got := await(t, framesA); got[14] != 'Y' || got[15:19][3] != byte(i) {
			t.Fatalf("frame %d on %s out of order: % x", i, a, got[:20])
		}
	}
	// b's loop may still be busy (with -race, on a loaded host) when a has
	// got every frame: await its spin rather than expect it at once.
	for deadline := time.Now().Add(5 * time.Second); peerCalls.Load() == 0 || !tok.Load(); {
		if time.Now().After(deadline) {
			t.Fatalf("b never busy-polled a while holding the pair's token after handling a frame (%d polls, token %v)",
				peerCalls.Load(), tok.Load())
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	hb.Close()
	select {
	case err := <-doneB:
		doneB <- err // for the cleanup
		if err != nil {
			t.Fatalf("Run after Close: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not stop a busy-polling Run")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close took %v to stop the spin", d)
	}
}

// TestPollOnceWithoutRun handles nothing: there is no handler yet.
func TestPollOnceWithoutRun(t *testing.T) {
	nsPath, a, b := vethPair(t)
	ha, hb := openIn(t, nsPath, a), openIn(t, nsPath, b)
	if err := ha.InjectFrame(testFrame('Z', 0)); err != nil {
		t.Fatal(err)
	}
	if hb.PollOnce() {
		t.Fatal("PollOnce handled a frame before Run set a handler")
	}
	hb.Close()
	if hb.PollOnce() {
		t.Fatal("PollOnce handled a frame after Close")
	}
}
