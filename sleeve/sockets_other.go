//go:build !linux

package sleeve

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// openSockets binds one UDP socket; without per-socket DF control the DF
// stream shares it, so PMTU discovery relies on probes alone.
func openSockets(host string, port int) (*sockets, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", addr, err)
	}
	c, err := net.ListenUDP("udp4", ua)
	if err != nil {
		return nil, fmt.Errorf("listen udp %s: %w", addr, err)
	}
	s := &sockets{main: c, df: c, port: c.LocalAddr().(*net.UDPAddr).Port}
	s.pmtu.fd = -1
	return s, nil
}

func (s *sockets) kernelPMTU(netip.AddrPort) (int, error) {
	return 0, errors.New("kernel PMTU lookup not supported on this platform")
}

func (s *sockets) closePMTU() {}

func isMsgTooBig(error) bool { return false }

// receiveLoop receives and handles datagrams until the socket is closed.
func (o *Overlay) receiveLoop() {
	defer o.wg.Done()
	for {
		n, from, err := o.socks.main.ReadFromUDPAddrPort(o.rx.buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			o.rxErrors.Add(1)
			continue
		}
		o.rx.Lock()
		o.handleDatagram(o.rx.buf[:n], from, o.rx.plain)
		o.rx.Unlock()
	}
}

// receiveLoop6 is never started outside Linux: openSockets binds IPv4 only.
func (o *Overlay) receiveLoop6(syscall.RawConn) { o.wg.Done() }

// readAndHandle is unused outside Linux.
func (o *Overlay) readAndHandle(uintptr) bool { return false }

// receiveLocked does nothing outside Linux (the loop above reads).
func (o *Overlay) receiveLocked(int) bool { return false }

// gsoControl is unused outside Linux (sockets.gso is never set).
type gsoControl [1]byte

func (c *gsoControl) set(int) []byte { return nil }

func isGSOUnsupported(error) bool { return true }

func isInvalid(error) bool { return false }

// rxMsg is unused outside Linux.
type rxMsg struct{}
