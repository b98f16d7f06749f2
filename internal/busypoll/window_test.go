package busypoll

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
	var b Window
	if b.Spin(func() bool { t.Fatal("spun while off"); return false }, &stop) {
		t.Fatal("spin while off reported work")
	}

	b = Window{}
	b.Set(50*time.Millisecond, nil, nil)
	calls := 0
	if !b.Spin(func() bool { calls++; return calls == 3 }, &stop) || calls != 3 {
		t.Fatalf("spin did not return own work: %d calls", calls)
	}

	b = Window{}
	peerWork := 0
	b.Set(2*time.Millisecond, func() bool { peerWork++; return peerWork <= 5 }, nil)
	start := time.Now()
	if b.Spin(never, &stop) {
		t.Fatal("spin reported own work")
	}
	if peerWork <= 5 || time.Since(start) < 2*time.Millisecond {
		t.Fatalf("peer polled %d times in %v", peerWork, time.Since(start))
	}
	// Straight after going to sleep the loop is busy, not idle: no spin.
	if b.Spin(func() bool { t.Fatal("spun within MinIdleGap"); return false }, &stop) {
		t.Fatal("spin within MinIdleGap reported work")
	}

	var tok atomic.Bool
	tok.Store(true)
	b = Window{}
	b.Set(time.Second, nil, &tok)
	if b.Spin(func() bool { t.Fatal("spun without the token"); return false }, &stop) {
		t.Fatal("spin without the token reported work")
	}

	tok.Store(false)
	b = Window{}
	b.Set(time.Hour, nil, &tok)
	n := 0
	if b.Spin(func() bool { n++; stop.Store(n == 10); return false }, &stop) {
		t.Fatal("stopped spin reported work")
	}
	if n != 10 || tok.Load() {
		t.Fatalf("stop: %d polls, token still held %v", n, tok.Load())
	}
}

// TestSpinStreakAfterWake: with Woke, a loop spins only after a wake-up
// that followed MinIdleGap of sleep, and only within MaxSpinStreak of it.
func TestSpinStreakAfterWake(t *testing.T) {
	var stop atomic.Bool
	var b Window
	b.Set(100*time.Microsecond, nil, nil)
	b.Woke() // the first wake: no sleep before it counts as idle (last is 0)
	polls := 0
	b.Spin(func() bool { polls++; return false }, &stop)
	if polls == 0 {
		t.Fatal("no spin after an idle wake-up")
	}
	b.Woke() // straight after going to sleep: a busy link
	if b.Spin(func() bool { t.Fatal("spun after a short sleep"); return false }, &stop) {
		t.Fatal("reported work")
	}
	time.Sleep(MinIdleGap + time.Millisecond) // an idle pause (no event to await: the rule is about time)
	b.Woke()
	if !b.Spin(func() bool { return true }, &stop) {
		t.Fatal("no spin right after an idle wake-up")
	}
	time.Sleep(MaxSpinStreak + time.Millisecond) // the burst goes on past the streak
	if b.Spin(func() bool { t.Fatal("spun past MaxSpinStreak"); return false }, &stop) {
		t.Fatal("reported work")
	}
}
