package sleeve

import (
	"net"
	"sync"
)

// sockets are the overlay's UDP sockets. main receives everything and
// sends the non-DF stream; df sends the DF stream (it equals main where
// the platform cannot set DF per socket).
type sockets struct {
	main *net.UDPConn
	df   *net.UDPConn
	port int
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
