//go:build !linux

package capture

import (
	"sync/atomic"
	"time"
)

// Handle is an open capture socket (never created outside Linux).
type Handle struct{}

// Open returns ErrUnsupported outside Linux.
func Open(ifname string) (*Handle, error) { return nil, ErrUnsupported }

// Run returns ErrUnsupported outside Linux.
func (h *Handle) Run(fn func(frame []byte)) error { return ErrUnsupported }

// InjectFrame returns ErrUnsupported outside Linux.
func (h *Handle) InjectFrame(frame []byte) error { return ErrUnsupported }

// Stats returns zero counters outside Linux.
func (h *Handle) Stats() Stats { return Stats{} }

// Close does nothing outside Linux.
func (h *Handle) Close() error { return nil }

// PollOnce does nothing outside Linux.
func (h *Handle) PollOnce() bool { return false }

// SetBusyPoll does nothing outside Linux.
func (h *Handle) SetBusyPoll(d time.Duration, peer func() bool, tok *atomic.Bool) {}

// SetBatch is a no-op on this platform.
func (h *Handle) SetBatch(begin, end func()) {}

// BeginBatch is a no-op on this platform.
func (h *Handle) BeginBatch() {}

// EndBatch is a no-op on this platform.
func (h *Handle) EndBatch() {}

// InjectErrors is always 0 on this platform.
func (h *Handle) InjectErrors() uint64 { return 0 }
