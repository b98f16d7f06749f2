package testutil

import (
	"runtime"
	"testing"
	"time"
)

func TestWaitGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	stop := make(chan struct{})
	go func() { <-stop }()
	if n := WaitGoroutines(before, 20*time.Millisecond); n <= before {
		t.Fatalf("a running goroutine was not counted: %d <= %d", n, before)
	}
	close(stop)
	if n := WaitGoroutines(before, 5*time.Second); n > before {
		t.Fatalf("goroutine that exited still counted: %d > %d", n, before)
	}
}
