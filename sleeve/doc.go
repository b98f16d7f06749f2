// Package sleeve is weave's userspace UDP overlay, wire compatible with
// Weave Net 2.8.1's sleeve.
//
// A sleeve datagram (UDP port 6783 by default) carries one or more
// Ethernet frames between two peers that share a mesh connection:
//
//	plaintext:  sender(6) | { src(6) dst(6) len(2, BE) frame(len) }...
//	encrypted:  sender(6) | seqNoAndDF(8, BE) | secretbox(tag(16) + frames)
//
// The sender is the peer that sent this hop; src and dst are the capturing
// and destination peers. Frames whose first 14 bytes are zero are special
// (heartbeat, fragmentation test, PMTU probe) and are told apart by length.
// Every forwarder owns two send channels: the DF channel (IP don't-fragment
// set, bit 63 of seqNoAndDF) and the non-DF channel, each with its own
// sequence counter and receive-side replay window.
//
// Between two of our routers (connection features SleeveJumbo and
// SleeveCiphers, see JumboFeature and CipherFeature) frames of up to 64 KiB
// travel whole in one non-DF datagram that the underlay fragments, sealed
// with AES-256-GCM or ChaCha20-Poly1305; Weave peers never see either.
//
// The overlay owns one receive goroutine; each confirmed forwarder owns
// one goroutine running heartbeats, the fragmentation test and PMTU
// discovery. Forward encodes, seals and sends synchronously under a
// per-channel mutex, without allocating. See docs/sleeve.md for details.
package sleeve
