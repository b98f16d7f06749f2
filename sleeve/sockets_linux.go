package sleeve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openSockets binds two UDP sockets to the same host:port with
// SO_REUSEPORT: main (IP_PMTUDISC_DONT: never DF, the kernel fragments)
// and df (IP_PMTUDISC_DO: DF set, EMSGSIZE when a datagram exceeds the
// path MTU). A classic-BPF reuseport program steers every incoming
// datagram to main (group index 0), so df never receives and one receive
// goroutine suffices. Both send from the sleeve port, as Weave does.
func openSockets(host string, port int) (*sockets, error) {
	if host == "" {
		host = "0.0.0.0"
	}
	main, err := listenUDP(host, port, unix.IP_PMTUDISC_DONT)
	if err != nil {
		return nil, err
	}
	if err := steerToFirst(main); err != nil {
		main.Close()
		return nil, err
	}
	port = main.LocalAddr().(*net.UDPAddr).Port
	df, err := listenUDP(host, port, unix.IP_PMTUDISC_DO)
	if err != nil {
		main.Close()
		return nil, err
	}
	pfd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		main.Close()
		df.Close()
		return nil, fmt.Errorf("open pmtu query socket: %w", err)
	}
	s := &sockets{main: main, df: df, port: port}
	s.pmtu.fd = pfd
	return s, nil
}

func listenUDP(host string, port, pmtudisc int) (*net.UDPConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); serr != nil {
				return
			}
			if serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, pmtudisc); serr != nil {
				return
			}
			serr = setBuffers(int(fd))
		})
		return errors.Join(err, serr)
	}}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	pc, err := lc.ListenPacket(context.Background(), "udp4", addr)
	if err != nil {
		return nil, fmt.Errorf("listen udp %s: %w", addr, err)
	}
	return pc.(*net.UDPConn), nil
}

// socketBuffer is the send and receive buffer we ask for on each UDP
// socket: the default (~208 KiB) holds only three 64 KiB jumbo datagrams,
// so a burst would be dropped while the receive goroutine is busy.
const socketBuffer = 8 << 20

// setBuffers raises SO_RCVBUF and SO_SNDBUF, beyond net.core.*mem_max
// when privileged (the *FORCE options), else as far as the limits allow.
func setBuffers(fd int) error {
	for _, o := range [][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[0], socketBuffer) == nil {
			continue
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[1], socketBuffer); err != nil {
			return fmt.Errorf("set socket buffer: %w", err)
		}
	}
	return nil
}

// steerToFirst attaches "return 0" as the reuseport program of c's group.
func steerToFirst(c *net.UDPConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("get raw conn: %w", err)
	}
	prog := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF,
			&unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]})
	})
	if err = errors.Join(err, serr); err != nil {
		return fmt.Errorf("attach reuseport steering program: %w", err)
	}
	return nil
}

// kernelPMTU asks the kernel for its path MTU towards remote. The PMTU
// cache is per destination, so a query socket (created with the others,
// hence in the same network namespace) is connected to remote and asked
// for IP_MTU; it never sends.
func (s *sockets) kernelPMTU(remote netip.AddrPort) (int, error) {
	s.pmtu.Lock()
	defer s.pmtu.Unlock()
	if s.pmtu.fd < 0 {
		return 0, fmt.Errorf("query pmtu towards %s: %w", remote, net.ErrClosed)
	}
	sa := &unix.SockaddrInet4{Port: int(remote.Port()), Addr: remote.Addr().Unmap().As4()}
	if err := unix.Connect(s.pmtu.fd, sa); err != nil {
		return 0, fmt.Errorf("connect pmtu socket to %s: %w", remote, err)
	}
	mtu, err := unix.GetsockoptInt(s.pmtu.fd, unix.IPPROTO_IP, unix.IP_MTU)
	if err != nil {
		return 0, fmt.Errorf("read IP_MTU towards %s: %w", remote, err)
	}
	return mtu, nil
}

func (s *sockets) closePMTU() {
	s.pmtu.Lock()
	defer s.pmtu.Unlock()
	if s.pmtu.fd >= 0 {
		unix.Close(s.pmtu.fd)
		s.pmtu.fd = -1
	}
}

func isMsgTooBig(err error) bool { return errors.Is(err, unix.EMSGSIZE) }

// receiveLoop receives and handles datagrams until the socket is closed.
func (o *Overlay) receiveLoop() {
	defer o.wg.Done()
	for {
		if err := o.raw.Read(o.readFn); err != nil || o.closed.Load() {
			return // only a closed socket fails the poller wait
		}
	}
}

// readAndHandle is the RawConn.Read callback: it handles every datagram
// that is ready, then busy-polls (see SetBusyPoll); false asks the
// netpoller to wait.
func (o *Overlay) readAndHandle(fd uintptr) bool {
	for !o.closed.Load() {
		o.rx.Lock()
		got := o.receiveLocked(int(fd))
		o.rx.Unlock()
		if got {
			continue
		}
		if !o.busy.Spin(o.ownPoll, &o.closed) {
			return false
		}
	}
	return true
}

// receiveLocked receives and handles at most one datagram without
// blocking; o.rx is held and fd is open.
func (o *Overlay) receiveLocked(fd int) bool {
	n, from, err := recvInet4(fd, o.rx.buf)
	switch {
	case errors.Is(err, unix.EAGAIN):
		return false
	case err != nil: // e.g. ECONNREFUSED from an earlier send: reported once
		o.rxErrors.Add(1)
		return true
	}
	o.handleDatagram(o.rx.buf[:n], from, o.rx.plain)
	return true
}

// recvInet4 is recvfrom(2) on an AF_INET socket without allocating a
// Sockaddr (x/sys/unix.Recvfrom allocates one per call).
func recvInet4(fd int, p []byte) (int, netip.AddrPort, error) {
	var rsa unix.RawSockaddrInet4
	salen := uint32(unsafe.Sizeof(rsa))
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))),
		uintptr(len(p)), unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&salen)))
	if errno != 0 {
		return 0, netip.AddrPort{}, errno
	}
	port := uint16(rsa.Port>>8) | uint16(rsa.Port<<8)
	return int(n), netip.AddrPortFrom(netip.AddrFrom4(rsa.Addr), port), nil
}
