package sleeve

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/weaveworks/mesh"
	"golang.org/x/crypto/nacl/secretbox"
)

// Wire-format sizes.
const (
	// NameSize is the size of a peer name on the wire.
	NameSize = 6
	// FrameOverhead is the per-frame header: src peer, dst peer, length.
	FrameOverhead = NameSize + NameSize + 2
	// SeqSize is the size of the seqNoAndDF field of encrypted datagrams.
	SeqSize = 8
	// PlainOverhead is the per-datagram overhead without encryption.
	PlainOverhead = NameSize
	// SealedOverhead is the per-datagram overhead with encryption:
	// sender, seqNoAndDF and the secretbox tag.
	SealedOverhead = NameSize + SeqSize + secretbox.Overhead
	// MaxUDPPayload is the largest IPv4 UDP payload.
	MaxUDPPayload = 65535 - 28
	// dfBit marks the DF channel in seqNoAndDF.
	dfBit = uint64(1) << 63
	// segBit marks the segment channel (SegmentsFeature, between our own
	// routers only): a third sequence space, so its nonces never meet the
	// DF and non-DF channels'. Weave's counters never reach 2^62.
	segBit = uint64(1) << 62
)

// ErrTruncated reports a datagram or frame shorter than its header says.
var ErrTruncated = errors.New("truncated sleeve datagram")

// PutPeerName writes the 6-byte wire form of name (its 6 low-order bytes,
// big-endian) into b.
func PutPeerName(b []byte, name mesh.PeerName) {
	_ = b[5]
	v := uint64(name)
	b[0] = byte(v >> 40)
	b[1] = byte(v >> 32)
	b[2] = byte(v >> 24)
	b[3] = byte(v >> 16)
	b[4] = byte(v >> 8)
	b[5] = byte(v)
}

// PeerNameAt reads a 6-byte wire peer name from b.
func PeerNameAt(b []byte) mesh.PeerName {
	_ = b[5]
	return mesh.PeerName(uint64(b[0])<<40 | uint64(b[1])<<32 | uint64(b[2])<<24 |
		uint64(b[3])<<16 | uint64(b[4])<<8 | uint64(b[5]))
}

// SealedHeader is the clear-text header of an encrypted datagram.
type SealedHeader struct {
	Sender mesh.PeerName
	Seq    uint64 // sequence number without the channel bits
	DF     bool   // DF channel
	Seg    bool   // segment channel (SegmentsFeature)
	Sealed []byte // secretbox output (tag + ciphertext)
}

// ParseSealed splits an encrypted datagram into its header and sealed box.
func ParseSealed(d []byte) (SealedHeader, error) {
	if len(d) < SealedOverhead {
		return SealedHeader{}, fmt.Errorf("parse sealed datagram of %d bytes: %w", len(d), ErrTruncated)
	}
	v := binary.BigEndian.Uint64(d[NameSize:])
	return SealedHeader{
		Sender: PeerNameAt(d),
		Seq:    v &^ (dfBit | segBit),
		DF:     v&dfBit != 0,
		Seg:    v&segBit != 0,
		Sealed: d[NameSize+SeqSize:],
	}, nil
}

// FrameIter walks the frames of a plaintext frame sequence without
// allocating. Use it as:
//
//	it := NewFrameIter(frames)
//	for it.Next() { use(it.Src, it.Dst, it.Frame) }
//	if it.Err() != nil { ... }
type FrameIter struct {
	rest  []byte
	err   error
	Src   mesh.PeerName
	Dst   mesh.PeerName
	Frame []byte
}

// NewFrameIter returns an iterator over frames (the datagram without its
// sender field, or a decrypted box).
func NewFrameIter(frames []byte) FrameIter { return FrameIter{rest: frames} }

// Next advances to the next frame; it returns false at the end or on error.
func (it *FrameIter) Next() bool {
	if it.err != nil || len(it.rest) == 0 {
		return false
	}
	if len(it.rest) < FrameOverhead {
		it.err = fmt.Errorf("decode frame header of %d bytes: %w", len(it.rest), ErrTruncated)
		return false
	}
	n := int(binary.BigEndian.Uint16(it.rest[12:]))
	if len(it.rest) < FrameOverhead+n {
		it.err = fmt.Errorf("decode frame of %d bytes with %d left: %w", n, len(it.rest)-FrameOverhead, ErrTruncated)
		return false
	}
	it.Src = PeerNameAt(it.rest)
	it.Dst = PeerNameAt(it.rest[NameSize:])
	it.Frame = it.rest[FrameOverhead : FrameOverhead+n]
	it.rest = it.rest[FrameOverhead+n:]
	return true
}

// Err returns the decoding error that stopped Next, if any.
func (it *FrameIter) Err() error { return it.err }

// Encoder builds datagrams for one channel of one forwarder: Begin, then
// Append frames while they fit, then Seal. It reuses its buffers and does
// not allocate once created. It is not safe for concurrent use.
type Encoder struct {
	sender   mesh.PeerName
	key      *[32]byte
	aead     cipher.AEAD // nil: secretbox (or plaintext without key)
	nonce    [12]byte    // AEAD nonce buffer (a local would escape)
	outbound bool
	df       bool
	seq      uint64
	limit    int    // max datagram size
	out      []byte // datagram buffer
	plain    []byte // frames before sealing (encrypted only)
	n        int    // bytes of frames appended
	nframes  int
}

// NewEncoder returns an encoder for datagrams sent by sender. key nil means
// plaintext. outbound is the polarity of the sender's mesh connection and
// df selects the channel bit; both only matter with a key.
func NewEncoder(sender mesh.PeerName, key *[32]byte, outbound, df bool) *Encoder {
	e := &Encoder{sender: sender, key: key, outbound: outbound, df: df, limit: MaxUDPPayload}
	e.out = make([]byte, MaxUDPPayload)
	if key != nil {
		e.plain = make([]byte, MaxUDPPayload)
	}
	return e
}

// NewEncoderCipher is NewEncoder for a connection that negotiated c (see
// CipherFeature). The AEAD ciphers seal in place: sender(6) |
// seqNoAndDF(8) | ciphertext | tag(16), with the first 14 bytes as
// additional data, so the sender field is authenticated too.
func NewEncoderCipher(sender mesh.PeerName, key *[32]byte, c Cipher, outbound, df bool) (*Encoder, error) {
	if key == nil || c == CipherSecretbox {
		return NewEncoder(sender, key, outbound, df), nil
	}
	a, err := newAEAD(c, key)
	if err != nil {
		return nil, err
	}
	return &Encoder{sender: sender, key: key, aead: a, outbound: outbound, df: df,
		limit: MaxUDPPayload, out: make([]byte, MaxUDPPayload)}, nil
}

// Overhead returns the per-datagram overhead of this encoder.
func (e *Encoder) Overhead() int {
	if e.key != nil {
		return SealedOverhead
	}
	return PlainOverhead
}

// SetLimit bounds the datagram size (e.g. from the path MTU); values
// outside (Overhead, MaxUDPPayload] mean MaxUDPPayload.
func (e *Encoder) SetLimit(n int) {
	if n <= e.Overhead() || n > MaxUDPPayload {
		n = MaxUDPPayload
	}
	e.limit = n
}

// Seq returns the sequence number the next sealed datagram will carry.
func (e *Encoder) Seq() uint64 { return e.seq }

// Begin starts a new datagram, discarding any unsealed frames.
func (e *Encoder) Begin() { e.n, e.nframes = 0, 0 }

// Frames returns the number of frames appended since Begin.
func (e *Encoder) Frames() int { return e.nframes }

// Append adds a frame if it fits within the datagram limit and reports
// whether it did. frame is copied.
func (e *Encoder) Append(src, dst mesh.PeerName, frame []byte) bool {
	if len(frame) > 0xffff || e.Overhead()+e.n+FrameOverhead+len(frame) > e.limit {
		return false
	}
	b := e.frameBuf()[e.n:]
	PutPeerName(b, src)
	PutPeerName(b[NameSize:], dst)
	binary.BigEndian.PutUint16(b[12:], uint16(len(frame)))
	copy(b[FrameOverhead:], frame)
	e.n += FrameOverhead + len(frame)
	e.nframes++
	return true
}

// AppendZero adds a special frame of n bytes: zeros, with tail copied to
// its end (e.g. the heartbeat's connection UID). It reports whether it fit.
func (e *Encoder) AppendZero(src, dst mesh.PeerName, n int, tail []byte) bool {
	if n > 0xffff || n < len(tail) || e.Overhead()+e.n+FrameOverhead+n > e.limit {
		return false
	}
	b := e.frameBuf()[e.n:]
	PutPeerName(b, src)
	PutPeerName(b[NameSize:], dst)
	binary.BigEndian.PutUint16(b[12:], uint16(n))
	body := b[FrameOverhead : FrameOverhead+n]
	clear(body[:n-len(tail)])
	copy(body[n-len(tail):], tail)
	e.n += FrameOverhead + n
	e.nframes++
	return true
}

func (e *Encoder) frameBuf() []byte {
	if e.aead != nil {
		return e.out[NameSize+SeqSize:]
	}
	if e.key != nil {
		return e.plain
	}
	return e.out[NameSize:]
}

// Seal finishes the datagram and returns it; the slice is valid until the
// next Begin. With a key it consumes one sequence number.
func (e *Encoder) Seal() []byte {
	PutPeerName(e.out, e.sender)
	if e.key == nil {
		return e.out[:NameSize+e.n]
	}
	v := e.seq
	if e.df {
		v |= dfBit
	}
	e.seq++
	binary.BigEndian.PutUint64(e.out[NameSize:], v)
	if e.aead != nil {
		const hdr = NameSize + SeqSize
		aeadNonce(&e.nonce, e.outbound, v)
		sealed := e.aead.Seal(e.out[hdr:hdr], e.nonce[:], e.out[hdr:hdr+e.n], e.out[:hdr])
		return e.out[:hdr+len(sealed)]
	}
	var nonce [24]byte
	makeNonce(&nonce, e.outbound, v)
	head := e.out[:NameSize+SeqSize]
	return secretbox.Seal(head, e.plain[:e.n], &nonce, e.key)
}
