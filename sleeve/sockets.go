package sleeve

import (
	"net"
	"net/netip"
	"sync"
)

// sockets are the overlay's UDP sockets. main receives everything and
// sends the non-DF stream; df sends the DF stream (it equals main where
// the platform cannot set DF per socket).
type sockets struct {
	main *net.UDPConn
	df   *net.UDPConn
	port int
	v6   bool // an AF_INET6 pair (IPV6_V6ONLY): carries IPv6 underlay links
	// gso: the kernel takes UDP_SEGMENT on sends and main has UDP_GRO on,
	// so segmented framing (SegmentsFeature) can be offered.
	gso  bool
	pmtu struct { // path-MTU query socket (Linux only)
		sync.Mutex
		fd int
	}
}

func (s *sockets) close() {
	s.closePMTU()
	s.main.Close()
	if s.df != s.main {
		s.df.Close()
	}
}

// socketsFor returns the socket pair of remote's address family: the
// primary pair, or the IPv6 pair opened beside an IPv4 one; nil when we
// have no socket of that family (e.g. IPv6 disabled on this host).
func (o *Overlay) socketsFor(remote netip.Addr) *sockets {
	v6 := !remote.Unmap().Is4()
	switch {
	case o.socks.v6 == v6:
		return o.socks
	case o.socks6 != nil && v6:
		return o.socks6
	}
	return nil
}

// splitGRO splits the first datagram off p, what one receive returned:
// with UDP_GRO (seg > 0, the segment size the kernel reported) several
// datagrams of one sender back to back, each seg bytes but the last, which
// may be shorter. seg <= 0, or not less than len(p), means p is one
// datagram (possibly empty). rest is empty after the last.
func splitGRO(p []byte, seg int) (d, rest []byte) {
	if seg <= 0 || seg >= len(p) {
		return p, nil
	}
	return p[:seg], p[seg:]
}
