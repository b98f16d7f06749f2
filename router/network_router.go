package router

import (
	"errors"

	"github.com/weaveworks/mesh"
)

// ethHeaderLen is the length of an untagged Ethernet header.
const ethHeaderLen = 14

// stpMAC is the IEEE 802.1D bridge group address used by STP BPDUs, which
// must never cross the overlay.
var stpMAC = MAC{0x01, 0x80, 0xc2, 0x00, 0x00, 0x00}

// isGroup reports whether mac is a broadcast or multicast address.
func isGroup(mac MAC) bool { return mac[0]&1 != 0 }

// HandleCaptured is called for every frame captured from the local bridge.
// It must not be called before Start. It does not retain frame.
func (r *NetworkRouter) HandleCaptured(frame []byte) {
	b := r.bound.Load()
	if len(frame) < ethHeaderLen || b == nil {
		return
	}
	dst, src := macAt(frame, 0), macAt(frame, 6)
	if dst == stpMAC {
		return
	}
	switch r.mac.Add(src, b.ourself) {
	case macConflict:
		if r.cfg.PktDebug {
			r.log.Debug("drop captured frame: src MAC belongs to a remote peer (loop)", "mac", src.String())
		}
		return
	case macMoved:
		r.log.Info("MAC moved to this peer", "mac", src.String())
	}
	if !isGroup(dst) {
		if peer, ok := r.mac.Lookup(dst); ok {
			if peer != b.ourself {
				r.relayUnicast(b, b.ourself, peer, frame, true)
			}
			return // local destinations are delivered by the bridge itself
		}
	}
	r.relayBroadcast(b, b.ourself, frame)
}

// HandleForwarded implements FrameHandler. It does not retain frame.
func (r *NetworkRouter) HandleForwarded(srcPeer, dstPeer mesh.PeerName, frame []byte) {
	b := r.bound.Load()
	if len(frame) < ethHeaderLen || b == nil || srcPeer == b.ourself {
		return
	}
	if dstPeer != b.ourself {
		r.relayUnicast(b, srcPeer, dstPeer, frame, false)
		return
	}
	dst, src := macAt(frame, 0), macAt(frame, 6)
	if r.mac.AddForced(src, srcPeer) == macMoved {
		r.log.Info("MAC moved to another peer", "mac", src.String(), "peer", srcPeer.String())
	}
	r.inject(b, frame)
	if !isGroup(dst) {
		if peer, ok := r.mac.Lookup(dst); ok && peer == b.ourself {
			return
		}
	}
	r.relayBroadcast(b, srcPeer, frame)
}

func (r *NetworkRouter) inject(b *binding, frame []byte) {
	if b.inj == nil {
		return
	}
	if err := b.inj.InjectFrame(frame); err != nil && r.cfg.PktDebug {
		r.log.Debug("inject frame failed", "err", err)
	}
}

// relayUnicast sends frame towards dstPeer via the next hop of the unicast
// route. captured tells whether the frame came from our own bridge, in
// which case a FrameTooBigError is answered with ICMP "fragmentation
// needed".
func (r *NetworkRouter) relayUnicast(b *binding, srcPeer, dstPeer mesh.PeerName, frame []byte, captured bool) {
	if r.deadPeer(dstPeer) {
		if r.cfg.PktDebug {
			r.log.Debug("drop frame: destination peer is dead", "peer", dstPeer.String())
		}
		return
	}
	hop, ok := b.routes.Unicast(dstPeer)
	if !ok || r.deadPeer(hop) {
		if r.cfg.PktDebug {
			r.log.Debug("drop frame: no unicast route, or via a dead peer", "peer", dstPeer.String())
		}
		return
	}
	fwd := r.sw.forwarderFor(hop)
	if fwd == nil {
		if r.cfg.PktDebug {
			r.log.Debug("drop frame: no forwarder", "peer", hop.String())
		}
		return
	}
	if err := fwd.Forward(srcPeer, dstPeer, frame); err != nil {
		r.unicastFailed(b, err, hop, frame, captured)
	}
}

func (r *NetworkRouter) unicastFailed(b *binding, err error, hop mesh.PeerName, frame []byte, captured bool) {
	var tooBig *FrameTooBigError
	if captured && errors.As(err, &tooBig) {
		r.sendFragNeeded(b, frame, tooBig.MTU)
		return
	}
	if r.cfg.PktDebug {
		r.log.Debug("forward frame failed", "peer", hop.String(), "err", err)
	}
}

// relayBroadcast floods frame along the broadcast tree rooted at srcPeer.
// Each next hop is addressed as the frame's destination peer.
func (r *NetworkRouter) relayBroadcast(b *binding, srcPeer mesh.PeerName, frame []byte) {
	for _, hop := range b.routes.Broadcast(srcPeer) {
		if r.deadPeer(hop) {
			continue
		}
		fwd := r.sw.forwarderFor(hop)
		if fwd == nil {
			continue
		}
		if err := fwd.Forward(srcPeer, hop, frame); err != nil && r.cfg.PktDebug {
			r.log.Debug("broadcast frame failed", "peer", hop.String(), "err", err)
		}
	}
}

// sendFragNeeded answers an oversized DF frame with ICMP "fragmentation
// needed", injected into the local bridge as if from the destination.
func (r *NetworkRouter) sendFragNeeded(b *binding, frame []byte, mtu int) {
	reply, err := FragNeeded(frame, mtu)
	if err != nil {
		if r.cfg.PktDebug {
			r.log.Debug("cannot build ICMP frag-needed", "err", err)
		}
		return
	}
	if r.cfg.PktDebug {
		r.log.Debug("frame too big, sent ICMP frag-needed", "mtu", mtu)
	}
	r.inject(b, reply)
}
