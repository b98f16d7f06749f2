//go:build linux

package nlsafe

import (
	"errors"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestRetryUntilConsistent(t *testing.T) {
	calls := 0
	got, err := retry("dump", func() (int, error) {
		calls++
		if calls < 3 {
			return -1, netlink.ErrDumpInterrupted
		}
		return 42, nil
	})
	if err != nil || got != 42 || calls != 3 {
		t.Fatalf("retry = %d, %v after %d calls; want 42, nil after 3", got, err, calls)
	}
}

func TestRetryGivesUp(t *testing.T) {
	calls := 0
	_, err := retry("list links", func() (int, error) { calls++; return 0, netlink.ErrDumpInterrupted })
	if !errors.Is(err, netlink.ErrDumpInterrupted) || calls != maxAttempts {
		t.Fatalf("after %d calls: %v; want ErrDumpInterrupted after %d", calls, err, maxAttempts)
	}
}

func TestRetryKeepsOtherErrors(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	if _, err := retry("dump", func() (int, error) { calls++; return 0, boom }); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("%v after %d calls; want boom after 1", err, calls)
	}
}
