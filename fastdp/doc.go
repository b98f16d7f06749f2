// Package fastdp is the kernel fast data path: a router.Overlay shown as
// "fastdp" (as Weave's) and negotiated in the Overlays feature as "vxlan"
// (so Weave peers never pick it), that carries unicast frames between peers through plain Linux
// VXLAN devices enslaved to the weave bridge, so that frames between
// containers on fast-path peers never visit userspace.
//
// Per mesh connection to peer P the forwarder creates one device
// "vxw-<P's short ID, 3 hex>" with
//
//	receive VNI = P | us<<12   (what P sends us)
//	send VNI    = us | P<<12   (per-FDB-entry VNI of the default entry)
//	dstport 6784 (mesh port + 1), local = our IP of the mesh TCP connection,
//	no learning in the vxlan device, DF set, TTL 64, MTU = bridge MTU
//	(over an IPv6 underlay: local6, no DF bit, UDP checksums on)
//
// and one default FDB entry 00:00:00:00:00:00 -> P's IP. The connection's
// family decides the device's: IPv4 and IPv6 links live side by side. Every vxw-* port
// and vethwe-bridge (the router's capture port) are bridge-isolated, so a
// frame from a VXLAN port only reaches containers, never the router or
// another VXLAN port, and frames the router injects never leave through
// VXLAN. The vxw ports never receive floods (flood, mcast_flood and
// bcast_flood off): the kernel only sends unicast to a vxw port whose
// destination MAC the bridge learned there. Broadcast, multicast and
// relayed (multi-hop) frames go through the router and sleeve, along the
// mesh broadcast tree, so they reach each peer exactly once.
//
// A link is used only once verified: each side sends heartbeats (a small
// one and a full-MTU one, zero source MAC, sent by AF_PACKET into the
// device) and the receiver acknowledges every one with an overlay control
// message over the mesh TCP connection. The link is usable while both
// full-size heartbeats and acks arrive within HeartbeatTimeout; otherwise it
// is on hold (router.HealthNotifier), bridge learning on the port is turned
// off and the port's learned FDB entries are flushed, and the switch uses
// sleeve. Heartbeats continue, so the link returns to VXLAN by itself. The
// reason for any fallback is reported by FallbackReason and shown by the
// switch in the connection's attributes. See docs/fastdp.md.
//
// Everything that touches the kernel is behind the Kernel interface
// (netlink and AF_PACKET on Linux); tests use a recording fake.
package fastdp
