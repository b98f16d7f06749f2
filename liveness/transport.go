package liveness

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// countingTransport is memberlist's own UDP+TCP transport, counting the
// bytes of the UDP packets it sends (probes, acks, gossip): the part of
// liveness traffic that scales with the cluster. Push/pull and fallback
// pings use TCP streams, which are not counted here.
type countingTransport struct {
	*memberlist.NetTransport
	sent atomic.Uint64
}

func newCountingTransport(c *Config) (*countingTransport, error) {
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{c.BindAddr}, BindPort: c.Port, Logger: newStdLogger(c.Logger, nil),
	})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Port)), err)
	}
	return &countingTransport{NetTransport: nt}, nil
}

// WriteTo implements memberlist.Transport.
func (t *countingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress implements memberlist.NodeAwareTransport.
func (t *countingTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	at, err := t.NetTransport.WriteToAddress(b, a)
	if err == nil {
		t.sent.Add(uint64(len(b)))
	}
	return at, err
}

// transport is what a Detector sends and listens through: one family's
// share of a dual-stack socket pair (familyTransport) or a socket pair of
// its own (countingTransport).
type transport interface {
	memberlist.NodeAwareTransport
	bytesSent() uint64
}

func (t *countingTransport) bytesSent() uint64 { return t.sent.Load() }

// dualTransport is one memberlist UDP+TCP socket pair on "::" (which takes
// IPv4 as mapped addresses too) shared by two memberlists, one per
// underlay family: each packet and stream goes to the memberlist of the
// family it came from, so both families use the same port, as mesh does.
type dualTransport struct {
	nt   *memberlist.NetTransport
	fam  [2]*familyTransport // [0] IPv4, [1] IPv6
	refs atomic.Int32
	stop chan struct{}
	done chan struct{}
}

// familyTransport is one family's view of a dualTransport.
type familyTransport struct {
	d       *dualTransport
	packets chan *memberlist.Packet
	streams chan net.Conn
	closed  chan struct{}
	once    sync.Once
	sent    atomic.Uint64
}

func newDualTransport(c *Config) (*dualTransport, error) {
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{c.BindAddr}, BindPort: c.Port, Logger: newStdLogger(c.Logger, nil),
	})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Port)), err)
	}
	d := &dualTransport{nt: nt, stop: make(chan struct{}), done: make(chan struct{})}
	for i := range d.fam {
		d.fam[i] = &familyTransport{d: d, packets: make(chan *memberlist.Packet, 64),
			streams: make(chan net.Conn, 8), closed: make(chan struct{})}
	}
	d.refs.Store(int32(len(d.fam)))
	go d.demux()
	return d, nil
}

// family returns the family an address of a packet or stream belongs to:
// 1 for IPv6, 0 for IPv4 (also IPv4-mapped IPv6, as a dual-stack socket
// reports IPv4 peers).
func family(a net.Addr) int {
	var ip net.IP
	switch a := a.(type) {
	case *net.UDPAddr:
		ip = a.IP
	case *net.TCPAddr:
		ip = a.IP
	}
	if ip != nil && ip.To4() == nil {
		return 1
	}
	return 0
}

// demux hands every packet and stream to its family's memberlist, and
// drops (closes) those of a family whose memberlist has shut down. It
// runs until the shared sockets are closed, so the listeners never block.
func (d *dualTransport) demux() {
	defer close(d.done)
	for {
		select {
		case <-d.stop:
			return
		case p := <-d.nt.PacketCh():
			f := d.fam[family(p.From)]
			if f.isClosed() {
				continue
			}
			select {
			case f.packets <- p:
			case <-f.closed:
			}
		case c := <-d.nt.StreamCh():
			f := d.fam[family(c.RemoteAddr())]
			if f.isClosed() { // a joiner is refused at once, not left to time out
				_ = c.Close()
				continue
			}
			select {
			case f.streams <- c:
			case <-f.closed:
				_ = c.Close()
			}
		}
	}
}

// FinalAdvertiseAddr implements memberlist.Transport.
func (f *familyTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return f.d.nt.FinalAdvertiseAddr(ip, port)
}

// PacketCh implements memberlist.Transport.
func (f *familyTransport) PacketCh() <-chan *memberlist.Packet { return f.packets }

// StreamCh implements memberlist.Transport.
func (f *familyTransport) StreamCh() <-chan net.Conn { return f.streams }

// WriteTo implements memberlist.Transport.
func (f *familyTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return f.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress implements memberlist.NodeAwareTransport.
func (f *familyTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	at, err := f.d.nt.WriteToAddress(b, a)
	if err == nil {
		f.sent.Add(uint64(len(b)))
	}
	return at, err
}

// DialTimeout implements memberlist.Transport.
func (f *familyTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return f.d.nt.DialTimeout(addr, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (f *familyTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return f.d.nt.DialAddressTimeout(a, timeout)
}

// Shutdown implements memberlist.Transport: the sockets close with the
// last family's memberlist.
func (f *familyTransport) Shutdown() error {
	var err error
	f.once.Do(func() {
		close(f.closed)
		for drained := false; !drained; { // streams queued for it
			select {
			case c := <-f.streams:
				_ = c.Close()
			default:
				drained = true
			}
		}
		if f.d.refs.Add(-1) == 0 {
			err = f.d.nt.Shutdown() // demux drains the listeners meanwhile
			close(f.d.stop)
			<-f.d.done
		}
	})
	return err
}

func (f *familyTransport) bytesSent() uint64 { return f.sent.Load() }

func (f *familyTransport) isClosed() bool {
	select {
	case <-f.closed:
		return true
	default:
		return false
	}
}
