//go:build linux

package capture

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seedf75a49c6/weave/internal/burst"
	"github.com/seedf75a49c6/weave/internal/busypoll"

	"golang.org/x/sys/unix"
)

const (
	// readBufSize holds the largest frame on a 65535-MTU link plus headroom.
	readBufSize = 65536 + 512
	// rcvBufSize is the requested socket receive buffer (Weave's --bufsz default, 8 MiB).
	rcvBufSize = 8 << 20
)

// Handle is an open capture socket.
type Handle struct {
	file *os.File
	rc   interface {
		Read(func(fd uintptr) bool) error
		Write(func(fd uintptr) bool) error
		Control(func(fd uintptr)) error
	}
	running atomic.Bool
	closed  atomic.Bool

	// rx serialises "read one frame + handle it" between Run and PollOnce,
	// so frames are handled one at a time and in order. It owns the reader.
	rx struct {
		sync.Mutex
		r      reader
		fn     func(frame []byte) // Run's handler, for PollOnce
		polled readResult         // result of the last pollCtl
		batch  burst.Bracket      // see SetBatch
	}
	busy    busypoll.Window
	fd      int           // the raw socket, for the busy-poll loop
	ownPoll func() bool   // bound once: tryHandle without waiting, on fd
	pollCtl func(uintptr) // bound once: PollOnce's Control callback

	write struct { // serialises InjectFrame and owns its reusable callback
		sync.Mutex
		frame []byte
		err   error
		fn    func(fd uintptr) bool
		batch injectBatch // batched injects (inject_batch_linux.go)
	}
	injectErrors atomic.Uint64

	stats struct { // accumulated PACKET_STATISTICS (the kernel resets on read)
		sync.Mutex
		Stats
	}
}

// Open binds an AF_PACKET socket to ifname, in promiscuous mode, ignoring
// outgoing frames (so injected frames are never captured again).
func Open(ifname string) (*Handle, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("look up interface %s: %w", ifname, err)
	}
	// Protocol 0 receives nothing until bind, so no other interface's frames leak in.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open packet socket for %s: %w", ifname, err)
	}
	if err := setup(fd, ifi.Index); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set up packet socket on %s: %w", ifname, err)
	}
	f := os.NewFile(uintptr(fd), "packet:"+ifname)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("get raw conn for %s: %w", ifname, err)
	}
	h := &Handle{file: f, rc: rc, fd: fd}
	h.ownPoll = func() bool { return h.tryHandle(h.fd, false) != readNone }
	h.pollCtl = func(fd uintptr) { h.rx.polled = h.handleLocked(int(fd)) }
	h.write.fn = h.writeOnce
	h.write.batch.fn = h.sendmmsgOnce
	return h, nil
}

// setup configures and binds the socket.
func setup(fd, ifindex int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fmt.Errorf("set PACKET_IGNORE_OUTGOING: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvBufSize); err != nil {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBufSize); err != nil {
			return fmt.Errorf("set SO_RCVBUF: %w", err)
		}
	}
	mreq := unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fmt.Errorf("enable promiscuous mode: %w", err)
	}
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("bind to ifindex %d: %w", ifindex, err)
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Run reads frames until Close is called, calling fn for each from a single
// goroutine at a time (Run's, or a PollOnce caller's). frame is only valid
// for the duration of fn. Returns nil after Close, or the read error. Only
// one Run may be active at a time.
func (h *Handle) Run(fn func(frame []byte)) error {
	if !h.running.CompareAndSwap(false, true) {
		return errors.New("capture: Run already active")
	}
	defer h.running.Store(false)
	h.rx.Lock()
	if h.rx.r.buf == nil {
		h.rx.r.buf = make([]byte, readBufSize)
	}
	h.rx.fn = fn
	h.rx.Unlock()
	defer func() { h.rx.Lock(); h.rx.batch.End(); h.rx.fn = nil; h.rx.Unlock() }()
	readFn := h.readAndHandle // bound once: no allocation per frame
	for {
		var err error
		if err := h.rc.Read(readFn); err != nil {
			if h.closed.Load() {
				return nil
			}
			return fmt.Errorf("read frame: %w", err)
		}
		h.rx.Lock()
		err, h.rx.r.err = h.rx.r.err, nil
		h.rx.Unlock()
		if err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENETDOWN) {
				continue
			}
			return fmt.Errorf("read frame: %w", err)
		}
	}
}

// readAndHandle is the RawConn.Read callback: it handles every frame that
// is ready, then busy-polls (see SetBusyPoll) before it returns false,
// which asks the netpoller to wait. true means a read error is in h.rx.r.err.
func (h *Handle) readAndHandle(fd uintptr) bool {
	h.busy.Woke()
	for {
		if h.closed.Load() {
			return true
		}
		switch h.tryHandle(int(fd), true) {
		case readError:
			return true
		case readHandled:
			continue
		}
		if !h.busy.Spin(h.ownPoll, &h.closed) {
			return false
		}
	}
}

type readResult int

const (
	readNone readResult = iota
	readHandled
	readError
)

// tryHandle reads and handles at most one frame without blocking. wait
// says whether to wait for the rx lock (Run) or give up when it is held.
// fd must be open: Run's Read callback, or PollOnce's Control callback.
func (h *Handle) tryHandle(fd int, wait bool) readResult {
	if wait {
		h.rx.Lock()
	} else if !h.rx.TryLock() {
		return readNone
	}
	defer h.rx.Unlock()
	return h.handleLocked(fd)
}

// handleLocked is tryHandle with h.rx held.
func (h *Handle) handleLocked(fd int) readResult {
	r := &h.rx.r
	if r.buf == nil || h.rx.fn == nil {
		return readNone
	}
	n, err := unix.Read(fd, r.buf)
	switch {
	case errors.Is(err, unix.EAGAIN):
		h.rx.batch.End()
		return readNone
	case err != nil:
		h.rx.batch.End()
		r.err = err
		return readError
	case n > 0:
		h.rx.batch.Begin()
		h.rx.fn(r.buf[:n])
		h.rx.batch.Handled(1)
		return readHandled
	}
	return readNone
}

// maxBatch bounds the frames of one batch, so that a run held back for one
// peer waits for at most this many frames to others.
const maxBatch = 64

// SetBatch makes the frame handling a batch: begin is called before the
// first frame of a burst is handled and end once no frame is waiting (or
// after maxBatch frames), so a handler can hold back what it sends for
// each frame and send it all at end. Call before Run; nil turns it off.
func (h *Handle) SetBatch(begin, end func()) {
	h.rx.Lock()
	defer h.rx.Unlock()
	h.rx.batch.Set(begin, end, maxBatch)
}

// PollOnce handles one captured frame, if one is waiting and Run is not
// handling one right now, with Run's handler, on the caller's goroutine.
// It never blocks and reports whether it handled a frame. The sleeve
// receive loop calls it after injecting a frame, so that a reply the
// container produced at once skips the capture goroutine's wake-up. A
// read error is left for Run to report.
func (h *Handle) PollOnce() bool {
	if h.closed.Load() || !h.rx.TryLock() {
		return false
	}
	defer h.rx.Unlock()
	h.rx.polled = readNone
	_ = h.rc.Control(h.pollCtl)
	h.rx.batch.End() // nobody else may read again soon
	return h.rx.polled == readHandled
}

// SetBusyPoll makes Run, once no frame is waiting, keep polling for up to d
// (calling peer, e.g. the overlay's PollOnce, and reading its own socket
// without blocking) before it sleeps in the netpoller. peer reports
// whether it did some work, which restarts the d window. tok, when not
// nil, is shared with the peer loop: only the loop holding it spins, since
// either one polls both sockets. d <= 0 turns busy-polling off (the
// default). Safe to call at any time.
func (h *Handle) SetBusyPoll(d time.Duration, peer func() bool, tok *atomic.Bool) {
	h.busy.Set(d, peer, tok)
}

// reader holds the reused buffer and the last read error.
type reader struct {
	buf []byte
	err error
}

// InjectFrame writes one frame into the interface. Safe for concurrent use.
func (h *Handle) InjectFrame(frame []byte) error {
	h.write.Lock()
	defer h.write.Unlock()
	if h.write.batch.depth > 0 && h.holdLocked(frame) {
		return nil
	}
	h.write.frame, h.write.err = frame, nil
	err := h.rc.Write(h.write.fn)
	h.write.frame = nil
	if err == nil {
		err = h.write.err
	}
	if err != nil {
		return fmt.Errorf("inject frame of %d bytes: %w", len(frame), err)
	}
	return nil
}

// writeOnce is the RawConn.Write callback; called with h.write held.
func (h *Handle) writeOnce(fd uintptr) bool {
	_, err := unix.Write(int(fd), h.write.frame)
	if errors.Is(err, unix.EAGAIN) {
		return false
	}
	h.write.err = err
	return true
}

// Stats reports capture counters, accumulated since Open.
func (h *Handle) Stats() Stats {
	h.stats.Lock()
	defer h.stats.Unlock()
	_ = h.rc.Control(func(fd uintptr) {
		st, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS)
		if err != nil {
			return
		}
		h.stats.PacketsReceived += uint64(st.Packets)
		h.stats.PacketsDropped += uint64(st.Drops)
	})
	return h.stats.Stats
}

// Close stops Run and releases the socket. Idempotent.
func (h *Handle) Close() error {
	if h.closed.Swap(true) {
		return nil
	}
	h.Stats() // keep the final counters readable after Close
	if err := h.file.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("close capture socket: %w", err)
	}
	return nil
}
