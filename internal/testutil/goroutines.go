// Package testutil holds small helpers for tests of every package: the
// goroutine-leak check and the race-detector flag. Only _test.go files
// import it, so no binary links the testing package.
package testutil

import (
	"runtime"
	"testing"
	"time"
)

// CheckGoroutines records the number of running goroutines and, when t
// ends, fails it if more are still running after a grace period, with
// every goroutine's stack (Stop must join whatever the test started).
// Call it before starting what the test stops.
func CheckGoroutines(t testing.TB, grace time.Duration) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		if n := WaitGoroutines(before, grace); n > before {
			buf := make([]byte, 1<<16)
			t.Errorf("goroutine leak: %d running, %d before the test\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
	})
}

// WaitGoroutines waits up to grace for the number of goroutines to drop
// to at most want and returns the last count. Goroutine exit has no event
// to await, so it polls.
func WaitGoroutines(want int, grace time.Duration) int {
	deadline := time.Now().Add(grace)
	n := runtime.NumGoroutine()
	for n > want && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}
