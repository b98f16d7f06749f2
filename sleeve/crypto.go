package sleeve

import (
	"crypto/cipher"
	"errors"
	"fmt"

	"golang.org/x/crypto/nacl/secretbox"
)

// Replay window geometry: two bitsets of 2^windowBits sequence numbers.
const (
	windowBits = 20
	windowSize = 1 << windowBits
)

var (
	// ErrAuth reports a datagram that failed secretbox authentication.
	ErrAuth = errors.New("sleeve datagram failed authentication")
	// ErrReplay reports a duplicate or too-old sequence number.
	ErrReplay = errors.New("sleeve datagram replayed or too old")
)

// makeNonce fills the 24-byte sleeve nonce: byte 0 bit 7 is set when the
// sender's mesh connection is outbound, bit 6 (the TCP-message bit) stays
// clear, bytes 16..23 carry seqNoAndDF big-endian.
func makeNonce(n *[24]byte, senderOutbound bool, seqNoAndDF uint64) {
	clear(n[:])
	if senderOutbound {
		n[0] = 0x80
	}
	for i := 0; i < 8; i++ {
		n[16+i] = byte(seqNoAndDF >> (56 - 8*uint(i)))
	}
}

// ReplayWindow tracks seen sequence numbers of one channel: the current
// window of 2^20 numbers and the one before it. Anything older, or already
// seen, is a replay.
type ReplayWindow struct {
	high    uint64 // index of the current window (seq >> windowBits)
	started bool
	cur     []uint64
	prev    []uint64
}

// NewReplayWindow returns an empty window.
func NewReplayWindow() *ReplayWindow {
	return &ReplayWindow{cur: make([]uint64, windowSize/64), prev: make([]uint64, windowSize/64)}
}

// Check records seq and reports whether it is new (not a replay).
func (w *ReplayWindow) Check(seq uint64) bool {
	idx := seq >> windowBits
	switch {
	case !w.started:
		w.started, w.high = true, idx
	case idx == w.high+1:
		w.cur, w.prev = w.prev, w.cur
		clear(w.cur)
		w.high = idx
	case idx > w.high+1:
		clear(w.cur)
		clear(w.prev)
		w.high = idx
	}
	var set []uint64
	switch idx {
	case w.high:
		set = w.cur
	case w.high - 1:
		set = w.prev
	default:
		return false
	}
	bit := seq & (windowSize - 1)
	word, mask := bit/64, uint64(1)<<(bit%64)
	if set[word]&mask != 0 {
		return false
	}
	set[word] |= mask
	return true
}

// Opener decrypts the datagrams of one remote sender: it holds the
// session key, the sender's polarity and one replay window per channel.
// Not safe for concurrent use (the receive loop owns it).
type Opener struct {
	key            *[32]byte
	aead           cipher.AEAD // nil: secretbox
	nonce          [12]byte    // AEAD nonce buffer (a local would escape)
	senderOutbound bool
	df, nonDF      *ReplayWindow
	seg            *ReplayWindow // OpenSegment's; created on the first segment
}

// NewOpener returns an opener for datagrams from a sender whose mesh
// connection has the given polarity.
func NewOpener(key *[32]byte, senderOutbound bool) *Opener {
	return &Opener{key: key, senderOutbound: senderOutbound, df: NewReplayWindow(), nonDF: NewReplayWindow()}
}

// NewOpenerCipher is NewOpener for a connection that negotiated c.
func NewOpenerCipher(key *[32]byte, c Cipher, senderOutbound bool) (*Opener, error) {
	o := NewOpener(key, senderOutbound)
	if c == CipherSecretbox {
		return o, nil
	}
	a, err := newAEAD(c, key)
	if err != nil {
		return nil, err
	}
	o.aead = a
	return o, nil
}

// Open authenticates and decrypts datagram d and returns the plaintext
// frames. Secretbox decrypts into out, which must not overlap d; the AEAD
// ciphers decrypt in place, inside d, and ignore out. Replays are detected
// only after successful authentication.
func (o *Opener) Open(out, d []byte) ([]byte, error) {
	h, err := ParseSealed(d)
	if err != nil {
		return nil, err
	}
	if h.Seg { // segments carry their header as additional data: OpenSegment
		return nil, fmt.Errorf("open datagram seq %d: segment channel: %w", h.Seq, ErrAuth)
	}
	v := h.Seq
	if h.DF {
		v |= dfBit
	}
	var plain []byte
	ok := false
	if o.aead != nil {
		aeadNonce(&o.nonce, o.senderOutbound, v)
		plain, err = o.aead.Open(h.Sealed[:0], o.nonce[:], h.Sealed, d[:NameSize+SeqSize])
		ok = err == nil
	} else {
		var nonce [24]byte
		makeNonce(&nonce, o.senderOutbound, v)
		plain, ok = secretbox.Open(out[:0], h.Sealed, &nonce, o.key)
	}
	if !ok {
		return nil, fmt.Errorf("open datagram seq %d: %w", h.Seq, ErrAuth)
	}
	w := o.nonDF
	if h.DF {
		w = o.df
	}
	if !w.Check(h.Seq) {
		return nil, ErrReplay
	}
	return plain, nil
}

// OpenSegment authenticates and decrypts a segment-channel datagram d
// (segmented framing: the header in clear as additional data) into dst,
// which must be exactly as long as the data, and then checks the replay
// window of the segment channel.
func (o *Opener) OpenSegment(dst, d []byte) error {
	h, err := ParseSealed(d)
	if err != nil {
		return err
	}
	const aad = NameSize + SeqSize + segHeaderLen
	if !h.Seg || h.DF || o.aead == nil || len(d) != aad+len(dst)+o.aead.Overhead() {
		return fmt.Errorf("open segment seq %d of %d bytes: %w", h.Seq, len(d), ErrAuth)
	}
	aeadNonce(&o.nonce, o.senderOutbound, h.Seq|segBit)
	if _, err := o.aead.Open(dst[:0], o.nonce[:], d[aad:], d[:aad]); err != nil {
		return fmt.Errorf("open segment seq %d: %w", h.Seq, ErrAuth)
	}
	if o.seg == nil {
		o.seg = NewReplayWindow()
	}
	if !o.seg.Check(h.Seq) {
		return ErrReplay
	}
	return nil
}

// Overhead is the size of the authentication tag this opener checks.
func (o *Opener) Overhead() int {
	if o.aead != nil {
		return o.aead.Overhead()
	}
	return secretbox.Overhead
}
