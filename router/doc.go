// Package router is weave's L2 switch: it sits between the local bridge
// (frames captured from and injected into it) and the data-plane overlays
// (sleeve, fastdp), learning which peer each MAC address lives behind and
// sending frames along the mesh's unicast and broadcast routes.
//
// Frame path:
//
//	bridge ──capture──▶ HandleCaptured(frame)
//	                      │ runt (<14 B) / STP 01:80:c2:00:00:00 ─▶ drop
//	                      │ learn src MAC → ourself (src cached for another
//	                      │   peer within MACMoveGrace ─▶ drop: loop)
//	                      │ dst known, local      ─▶ drop (bridge delivered it)
//	                      │ dst known, peer P     ─▶ Routes.Unicast(P) = hop
//	                      │                           switch[hop].Forward(us, P)
//	                      │                           (FrameTooBigError ─▶ ICMP 3/4
//	                      │                            injected back into bridge)
//	                      └ unknown / bcast / mcast ─▶ ∀ hop ∈ Routes.Broadcast(us):
//	                                                   switch[hop].Forward(us, hop)
//
//	overlay ──receive──▶ HandleForwarded(src, dst, frame)
//	                      │ dst ≠ us ─▶ relay: switch[Routes.Unicast(dst)].Forward(src, dst)
//	                      │ learn src MAC → src (AddForced), inject into bridge
//	                      └ dst MAC bcast/mcast/not local ─▶
//	                           ∀ hop ∈ Routes.Broadcast(src): switch[hop].Forward(src, hop)
//
// The OverlaySwitch is the mesh.Overlay: for each mesh connection it
// prepares a sub-forwarder on every overlay both peers support (feature
// "Overlays", our order), wraps their control messages in mesh tag 7 as
// [index][tag][body...], and forwards over the first established one that
// is not on hold, falling back to later ones on ErrCannotForward. Peers
// without the feature get the "sleeve" overlay directly (legacy tags 1-3).
//
// The hot path (HandleCaptured, HandleForwarded, SwitchForwarder.Forward)
// does not allocate and does not hand frames to other goroutines: MAC
// cache refreshes are atomic stores under a read lock and the per-peer
// forwarder table is an immutable map behind an atomic pointer.
package router
