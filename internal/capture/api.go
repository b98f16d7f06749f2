// Package capture reads and writes Ethernet frames on one interface (the
// router's end of the bridge capture veth) with an AF_PACKET socket: pure
// Go, no libpcap, no cgo. Frames the router injects are not read back.
//
// The socket is SOCK_RAW/ETH_P_ALL bound to the interface, promiscuous, with
// PACKET_IGNORE_OUTGOING so nothing the host sends out of the interface
// (including our own injected frames) is captured. It is non-blocking and
// registered with the Go runtime poller, so Close wakes a blocked Run. Run
// reads every frame into one reused buffer (no allocation per frame).
//
// Linux only by design; Open returns ErrUnsupported elsewhere.
package capture

import "errors"

// ErrUnsupported is returned by Open on platforms without AF_PACKET.
var ErrUnsupported = errors.New("capture: AF_PACKET is only supported on Linux")

// Stats are capture counters (shape of Weave's CaptureStats).
type Stats struct {
	PacketsReceived  uint64 // frames the kernel delivered to the socket, including dropped ones (like libpcap ps_recv)
	PacketsDropped   uint64 // frames dropped because the socket buffer was full
	PacketsIfDropped uint64 // always 0: interface drops are not tracked here
}
