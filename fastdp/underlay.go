package fastdp

// Underlay is the network the fast path's devices send over, as far as
// the default MTU is concerned.
type Underlay struct {
	MTU   int    // the interface's MTU; 1500 when none was found
	Iface string // "" when none was found
	IPv6  bool   // links go over IPv6: VXLAN costs Overhead6, not Overhead
}

// OverlayMTU is the device (= bridge) MTU that fills the underlay MTU:
// MTU - 50 over IPv4, MTU - 70 over IPv6.
func (u Underlay) OverlayMTU() int {
	if u.IPv6 {
		return u.MTU - Overhead6
	}
	return u.MTU - Overhead
}
