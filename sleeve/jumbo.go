package sleeve

import (
	"github.com/seedf75a49c6/weave/router"
	"github.com/weaveworks/mesh"
)

// JumboFeature is the mesh connection feature by which two of our routers
// agree on jumbo framing. Each side that offers it sets it to "1"; Weave
// 2.8.1 ignores unknown features and never sets it, so a Weave peer keeps
// Weave's exact behaviour (path MTU, DF channel, ICMP frag-needed).
//
// With jumbo framing, once the fragmentation test has passed (the remote
// reassembled our 60001-byte non-DF datagram), every frame goes out on the
// non-DF channel as one datagram of up to MaxUDPPayload bytes, which the
// underlay's IP layer fragments and the remote kernel reassembles. The
// overlay MTU becomes JumboMTU, so TCP in the containers sends segments of
// ~64 KiB: one capture read, one seal, one send, one receive, one open and
// one inject per 64 KiB instead of per 1.4 KiB. The datagrams are Weave's
// format unchanged (same header, nonces, sequence numbers and replay
// windows); only their size differs, so the encryption guarantees are the
// same.
const JumboFeature = "SleeveJumbo"

// JumboMTU is the largest IP packet that fits one sleeve datagram:
// MaxUDPPayload minus the datagram overhead, the frame header and the inner
// Ethernet header. 65473 in plaintext, 65449 encrypted.
func JumboMTU(encrypted bool) int {
	o := PlainOverhead
	if encrypted {
		o = SealedOverhead
	}
	return MaxUDPPayload - o - FrameOverhead - ethHeaderLen
}

// forwardJumbo sends frame on the non-DF channel (jumbo framing is on).
// Too big for one datagram: an IPv4 frame with DF set gets FrameTooBig
// (the router answers with ICMP frag-needed for JumboMTU), another IPv4
// frame is split into IP fragments, anything else is dropped.
func (f *forwarder) forwardJumbo(src, dst mesh.PeerName, frame []byte) error {
	mtu := f.jumboMTU
	if len(frame) <= mtu+ethHeaderLen {
		return f.sendFrame(&f.nonDFCh, src, dst, frame)
	}
	ihl, df, isIPv4 := ipv4Header(frame)
	switch {
	case isIPv4 && df:
		f.cnt.TooBig.Add(1)
		return &router.FrameTooBigError{MTU: mtu}
	case isIPv4:
		return f.fragment(&f.nonDFCh, src, dst, frame, ihl, mtu)
	default:
		f.cnt.TxDropped.Add(1)
		return nil
	}
}
