// Package capture reads and writes Ethernet frames on one interface (the
// router's end of the bridge capture veth) with an AF_PACKET socket: pure
// Go, no libpcap, no cgo. Frames the router injects are not read back.
package capture

// Handle is an open capture socket.
type Handle struct{}

// Open binds an AF_PACKET socket to ifname, in promiscuous mode, ignoring
// outgoing frames (so injected frames are never captured again).
func Open(ifname string) (*Handle, error) { panic("TODO") }

// Run reads frames until Close is called, calling fn for each from a single
// goroutine. frame is only valid for the duration of fn. Returns nil after
// Close, or the read error.
func (h *Handle) Run(fn func(frame []byte)) error { panic("TODO") }

// InjectFrame writes one frame into the interface. Safe for concurrent use.
func (h *Handle) InjectFrame(frame []byte) error { panic("TODO") }

// Stats reports capture counters.
func (h *Handle) Stats() Stats { panic("TODO") }

// Stats are capture counters (shape of Weave's CaptureStats).
type Stats struct {
	PacketsReceived  uint64
	PacketsDropped   uint64
	PacketsIfDropped uint64
}

// Close stops Run and releases the socket. Idempotent.
func (h *Handle) Close() error { panic("TODO") }
