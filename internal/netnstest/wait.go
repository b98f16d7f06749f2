package netnstest

import (
	"testing"
	"time"
)

// WaitFor polls cond until it returns nil or timeout passes, then fails t
// with cond's last error. Use it only where there is no event to await
// (router state behind an HTTP API, kernel state); the poll interval starts
// at 20ms and backs off to 500ms.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := Poll(timeout, cond); err != nil {
		t.Fatalf("waiting %v for %s: %v", timeout, what, err)
	}
}

// Poll is WaitFor without a testing.TB: it returns cond's last error when
// timeout passes, or nil as soon as cond succeeds.
func Poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	interval := 20 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(interval)
		interval = min(interval*2, 500*time.Millisecond)
	}
}
