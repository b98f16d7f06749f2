//go:build linux

package capture

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"

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

	write struct { // serialises InjectFrame and owns its reusable callback
		sync.Mutex
		frame []byte
		err   error
		fn    func(fd uintptr) bool
	}

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
	h := &Handle{file: f, rc: rc}
	h.write.fn = h.writeOnce
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
// goroutine. frame is only valid for the duration of fn. Returns nil after
// Close, or the read error. Only one Run may be active at a time.
func (h *Handle) Run(fn func(frame []byte)) error {
	if !h.running.CompareAndSwap(false, true) {
		return errors.New("capture: Run already active")
	}
	defer h.running.Store(false)
	r := reader{buf: make([]byte, readBufSize)}
	readFn := r.readOnce // bound once: no allocation per frame
	for {
		if err := h.rc.Read(readFn); err != nil {
			if h.closed.Load() {
				return nil
			}
			return fmt.Errorf("read frame: %w", err)
		}
		if r.err != nil {
			if errors.Is(r.err, unix.EINTR) || errors.Is(r.err, unix.ENETDOWN) {
				continue
			}
			return fmt.Errorf("read frame: %w", r.err)
		}
		if r.n > 0 {
			fn(r.buf[:r.n])
		}
	}
}

// reader holds the reused buffer and the result of the last read.
type reader struct {
	buf []byte
	n   int
	err error
}

// readOnce is the RawConn.Read callback: false asks the poller to wait.
func (r *reader) readOnce(fd uintptr) bool {
	n, err := unix.Read(int(fd), r.buf)
	if errors.Is(err, unix.EAGAIN) {
		return false
	}
	r.n, r.err = n, err
	return true
}

// InjectFrame writes one frame into the interface. Safe for concurrent use.
func (h *Handle) InjectFrame(frame []byte) error {
	h.write.Lock()
	defer h.write.Unlock()
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
