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
// SO_REUSEPORT: main (PMTUDISC_DONT: IPv4 never sets DF and the kernel
// fragments; IPv6 fragments at the source to the path MTU) and df
// (PMTUDISC_DO: DF set on IPv4, no source fragmentation on IPv6; EMSGSIZE
// when a datagram exceeds the path MTU). A classic-BPF reuseport program
// steers every incoming datagram to main (group index 0), so df never
// receives and one receive goroutine per family suffices. Both send from
// the sleeve port, as Weave does. The family is the host's: IPv4 for ""
// or an IPv4 address, IPv6 (IPV6_V6ONLY) for "::" or an IPv6 address.
func openSockets(host string, port int) (*sockets, error) {
	if host == "" {
		host = "0.0.0.0"
	}
	v6 := isIPv6Host(host)
	main, err := listenUDP(v6, host, port, unix.IP_PMTUDISC_DONT)
	if err != nil {
		return nil, err
	}
	if err := steerToFirst(main); err != nil {
		main.Close()
		return nil, err
	}
	port = main.LocalAddr().(*net.UDPAddr).Port
	df, err := listenUDP(v6, host, port, unix.IP_PMTUDISC_DO)
	if err != nil {
		main.Close()
		return nil, err
	}
	family := unix.AF_INET
	if v6 {
		family = unix.AF_INET6
	}
	pfd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		main.Close()
		df.Close()
		return nil, fmt.Errorf("open pmtu query socket: %w", err)
	}
	s := &sockets{main: main, df: df, port: port, v6: v6}
	s.pmtu.fd = pfd
	s.gso = enableGSO(main, df)
	return s, nil
}

// enableGSO turns UDP_GRO on for main (which receives everything) and
// checks that df (which sends segments) takes UDP_SEGMENT; false on a
// kernel without them (before 4.18 / 5.0), which then never offers
// segmented framing.
func enableGSO(main, df *net.UDPConn) bool {
	ok := true
	for _, c := range []struct {
		conn *net.UDPConn
		opt  int
		val  int
	}{{main, unix.UDP_GRO, 1}, {df, unix.UDP_SEGMENT, 0}} {
		raw, err := c.conn.SyscallConn()
		if err != nil {
			return false
		}
		if err := raw.Control(func(fd uintptr) {
			ok = ok && unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, c.opt, c.val) == nil
		}); err != nil {
			return false
		}
	}
	return ok
}

// gsoControl is the control message of a UDP_SEGMENT send: cmsghdr plus a
// uint16 segment size, padded.
type gsoControl [unix.SizeofCmsghdr + 8]byte

// set fills c for segments of size and returns the bytes to pass as oob.
func (c *gsoControl) set(size int) []byte {
	h := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
	h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&c[unix.SizeofCmsghdr])) = uint16(size)
	return c[:unix.CmsgSpace(2)]
}

// isGSOUnsupported reports a send error that means this path cannot take
// UDP_SEGMENT (e.g. EIO: the egress device has no checksum offload).
func isGSOUnsupported(err error) bool {
	return errors.Is(err, unix.EIO) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOPROTOOPT)
}

// isInvalid reports EINVAL (e.g. a GSO segment longer than the device MTU).
func isInvalid(err error) bool { return errors.Is(err, unix.EINVAL) }

func listenUDP(v6 bool, host string, port, pmtudisc int) (*net.UDPConn, error) {
	network, level, opt := "udp4", unix.IPPROTO_IP, unix.IP_MTU_DISCOVER
	if v6 { // IPV6_PMTUDISC_DONT/DO have the IPv4 constants' values
		network, level, opt = "udp6", unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); serr != nil {
				return
			}
			if serr = unix.SetsockoptInt(int(fd), level, opt, pmtudisc); serr != nil {
				return
			}
			serr = setBuffers(int(fd))
		})
		return errors.Join(err, serr)
	}}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	pc, err := lc.ListenPacket(context.Background(), network, addr)
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
	var sa unix.Sockaddr
	level, opt := unix.IPPROTO_IP, unix.IP_MTU
	if s.v6 { // the kernel's PMTU cache learns from ICMPv6 Packet Too Big
		sa = &unix.SockaddrInet6{Port: int(remote.Port()), Addr: remote.Addr().As16()}
		level, opt = unix.IPPROTO_IPV6, unix.IPV6_MTU
	} else {
		sa = &unix.SockaddrInet4{Port: int(remote.Port()), Addr: remote.Addr().Unmap().As4()}
	}
	if err := unix.Connect(s.pmtu.fd, sa); err != nil {
		return 0, fmt.Errorf("connect pmtu socket to %s: %w", remote, err)
	}
	mtu, err := unix.GetsockoptInt(s.pmtu.fd, level, opt)
	if err != nil {
		return 0, fmt.Errorf("read path MTU towards %s: %w", remote, err)
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

// isIPv6Host reports whether host is an IPv6 address (not IPv4-mapped).
func isIPv6Host(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && a.Is6() && !a.Is4In6()
}

func isMsgTooBig(err error) bool { return errors.Is(err, unix.EMSGSIZE) }

// receiveLoop receives and handles datagrams until the socket is closed.
func (o *Overlay) receiveLoop() {
	defer o.wg.Done()
	defer o.closeRxBatch() // never leave the injector's batch open
	for {
		if err := o.raw.Read(o.readFn); err != nil || o.closed.Load() {
			return // only a closed socket fails the poller wait
		}
	}
}

// receiveLoop6 is the receive loop of the IPv6 pair opened beside the
// IPv4 one; it shares the rx lock and buffers but does not busy-poll.
func (o *Overlay) receiveLoop6(raw syscall.RawConn) {
	defer o.wg.Done()
	defer o.closeRxBatch()
	read := func(fd uintptr) bool {
		for !o.closed.Load() {
			o.rx.Lock()
			got := o.receiveLocked(int(fd))
			o.rx.Unlock()
			if !got {
				return false
			}
		}
		return true
	}
	for {
		if err := raw.Read(read); err != nil || o.closed.Load() {
			return
		}
	}
}

// readAndHandle is the RawConn.Read callback: it handles every datagram
// that is ready, then busy-polls (see SetBusyPoll); false asks the
// netpoller to wait.
func (o *Overlay) readAndHandle(fd uintptr) bool {
	o.busy.Woke()
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

// receiveLocked receives and handles at most one datagram, or one GRO
// run of them, without blocking; o.rx is held and fd is open.
func (o *Overlay) receiveLocked(fd int) bool {
	n, seg, from, err := o.rx.msg.recv(fd, o.rx.buf)
	switch {
	case errors.Is(err, unix.EAGAIN):
		o.rx.batch.End()
		return false
	case err != nil: // e.g. ECONNREFUSED from an earlier send: reported once
		o.rxErrors.Add(1)
		return true
	}
	o.rx.batch.Begin()
	k := 0
	for p := o.rx.buf[:n]; ; {
		var d []byte
		d, p = splitGRO(p, seg)
		o.handleDatagram(d, from, o.rx.plain)
		k++
		if len(p) == 0 {
			break
		}
	}
	o.rx.batch.Handled(k)
	return true
}

// rxMsg is the reusable state of recvmsg(2) on the main socket: with
// UDP_GRO the kernel may hand over several datagrams of one flow at once
// and says their size in a control message. Kept in the overlay so no call
// allocates (x/sys/unix.Recvmsg allocates a Sockaddr per call).
type rxMsg struct {
	hdr  unix.Msghdr
	iov  unix.Iovec
	name unix.RawSockaddrInet6 // big enough for either family; Family says which
	oob  [64]byte
}

// recv receives into p; seg is the GRO segment size, 0 for one datagram.
func (m *rxMsg) recv(fd int, p []byte) (n, seg int, from netip.AddrPort, err error) {
	m.iov.Base = unsafe.SliceData(p)
	m.iov.SetLen(len(p))
	m.hdr = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&m.name)), Namelen: uint32(unsafe.Sizeof(m.name)), Iov: &m.iov}
	m.hdr.Iovlen = 1
	m.hdr.Control = &m.oob[0]
	m.hdr.SetControllen(len(m.oob))
	r, _, errno := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdr)), unix.MSG_DONTWAIT)
	if errno != 0 {
		return 0, 0, netip.AddrPort{}, errno
	}
	port := uint16(m.name.Port>>8) | uint16(m.name.Port<<8)
	if m.name.Family == unix.AF_INET6 {
		from = netip.AddrPortFrom(netip.AddrFrom16(m.name.Addr).Unmap(), port)
	} else {
		v4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(&m.name))
		from = netip.AddrPortFrom(netip.AddrFrom4(v4.Addr), port)
	}
	return int(r), groSegment(m.oob[:m.hdr.Controllen]), from, nil
}

// groSegment returns the UDP_GRO segment size in a control buffer, or 0.
func groSegment(oob []byte) int {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return 0
		}
		if h.Level == unix.IPPROTO_UDP && h.Type == unix.UDP_GRO && l >= unix.CmsgLen(4) {
			return int(*(*int32)(unsafe.Pointer(&oob[unix.SizeofCmsghdr])))
		}
		oob = oob[min(unix.CmsgSpace(l-unix.SizeofCmsghdr), len(oob)):]
	}
	return 0
}
