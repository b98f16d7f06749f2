//go:build linux

package capture

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Batched injects: between BeginBatch and EndBatch (the sleeve receive loop
// calls them around each burst of received datagrams), InjectFrame copies a
// small frame into an arena instead of writing it, and EndBatch writes them
// all with one sendmmsg(2): one syscall per burst instead of one per frame.
// The kernel's work per frame (bridge, veth, the container's stack) is the
// same. Frames too big to be worth the copy are written at once, after the
// held ones, so the order is kept.

const (
	injectArena    = 256 << 10 // bytes of frames one batch holds
	maxInjectBatch = 64        // frames one sendmmsg writes
	// maxHeldFrame: bigger frames are written at once (their syscall costs
	// little next to their bytes, and the copy would cost more).
	maxHeldFrame = 16 << 10
)

// injectBatch is the state of batched injects; h.write guards it.
type injectBatch struct {
	depth int
	arena []byte // injectArena, made on the first batched frame
	n     int    // bytes of arena in use
	msgs  [maxInjectBatch]unix.Mmsghdr
	iovs  [maxInjectBatch]unix.Iovec
	cnt   int // frames held
	done  int // frames of this flush already written
	err   error
	fn    func(fd uintptr) bool // bound once: sendmmsgOnce
}

// BeginBatch opens a batch of injects: until the matching EndBatch,
// InjectFrame may hold frames back and report nil; errors writing them are
// counted (InjectErrors). Batches nest. Safe for concurrent use.
func (h *Handle) BeginBatch() {
	h.write.Lock()
	defer h.write.Unlock()
	h.write.batch.depth++
}

// EndBatch closes a batch; when it was the last open one, every held frame
// is written.
func (h *Handle) EndBatch() {
	h.write.Lock()
	defer h.write.Unlock()
	b := &h.write.batch
	if b.depth > 0 {
		b.depth--
	}
	if b.depth == 0 {
		h.flushInjectsLocked()
	}
}

// InjectErrors is the number of held frames that failed to be written.
func (h *Handle) InjectErrors() uint64 { return h.injectErrors.Load() }

// holdLocked holds frame back for the open batch, writing what is held
// first when it is full; false means frame is to be written at once (what
// was held has been written). h.write is held.
func (h *Handle) holdLocked(frame []byte) bool {
	b := &h.write.batch
	if len(frame) > maxHeldFrame || len(frame) == 0 {
		h.flushInjectsLocked()
		return false
	}
	if b.cnt == maxInjectBatch || b.n+len(frame) > injectArena {
		h.flushInjectsLocked()
	}
	if b.arena == nil {
		b.arena = make([]byte, injectArena) // once per handle
	}
	p := b.arena[b.n : b.n+len(frame)]
	copy(p, frame)
	b.n += len(frame)
	b.iovs[b.cnt].Base = unsafe.SliceData(p)
	b.iovs[b.cnt].SetLen(len(p))
	b.msgs[b.cnt] = unix.Mmsghdr{Hdr: unix.Msghdr{Iov: &b.iovs[b.cnt], Iovlen: 1}}
	b.cnt++
	return true
}

// flushInjectsLocked writes the held frames; h.write is held.
func (h *Handle) flushInjectsLocked() {
	b := &h.write.batch
	if b.cnt == 0 {
		return
	}
	b.done, b.err = 0, nil
	if err := h.rc.Write(b.fn); err != nil { // the socket is closed
		h.injectErrors.Add(uint64(b.cnt - b.done))
	}
	b.cnt, b.n, b.done = 0, 0, 0
}

// sendmmsgOnce is the RawConn.Write callback of a flush: it writes the
// held frames from b.done on; a frame the kernel refuses is counted and
// skipped. false (EAGAIN) waits until the socket is writable.
func (h *Handle) sendmmsgOnce(fd uintptr) bool {
	b := &h.write.batch
	for b.done < b.cnt {
		r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&b.msgs[b.done])),
			uintptr(b.cnt-b.done), 0, 0, 0)
		switch {
		case errno == unix.EAGAIN:
			return false
		case errno == unix.EINTR:
			continue
		case errno != 0: // the first frame left failed: skip it
			h.injectErrors.Add(1)
			b.err = errno
			b.done++
		default:
			b.done += int(r)
		}
	}
	return true
}
