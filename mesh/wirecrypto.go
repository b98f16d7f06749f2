package mesh

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"golang.org/x/crypto/nacl/box"
	"golang.org/x/crypto/nacl/secretbox"
)

// SealOverhead is what secretbox adds to every encrypted TCP frame body.
const SealOverhead = secretbox.Overhead

// SessionKey derives the TCP session key of an encrypted connection:
// SHA-256 of the NaCl precomputed shared key (box.Precompute, i.e.
// HSalsa20 of the X25519 result) followed by the password.
func SessionKey(remotePub, localPriv *[32]byte, password []byte) *[32]byte {
	var shared [32]byte
	box.Precompute(&shared, remotePub, localPriv)
	key := sha256.Sum256(append(shared[:], password...))
	return &key
}

// TCPNonce returns the nonce of the seq-th message (from 0) sent by the
// side that dialled the connection (senderOutbound) or accepted it.
// Byte 0: bit 7 = sender dialled, bit 6 = TCP; bytes 16..23 = seq BE.
func TCPNonce(senderOutbound bool, seq uint64) *[24]byte {
	var n [24]byte
	n[0] = 1 << 6
	if senderOutbound {
		n[0] |= 1 << 7
	}
	binary.BigEndian.PutUint64(n[16:], seq)
	return &n
}

// TCPCipher seals or opens the frame bodies of one direction of an
// encrypted connection, counting messages for the nonce.
type TCPCipher struct {
	key            *[32]byte
	senderOutbound bool
	seq            uint64
}

// NewTCPCipher returns a cipher for the messages sent by the side whose
// polarity is senderOutbound.
func NewTCPCipher(key *[32]byte, senderOutbound bool) *TCPCipher {
	return &TCPCipher{key: key, senderOutbound: senderOutbound}
}

// Seal encrypts the next message.
func (c *TCPCipher) Seal(msg []byte) []byte {
	out := secretbox.Seal(nil, msg, TCPNonce(c.senderOutbound, c.seq), c.key)
	c.seq++
	return out
}

// Open decrypts the next message; any failure is fatal for the connection
// (the peer's sequence is then unknown), as in mesh.
func (c *TCPCipher) Open(sealed []byte) ([]byte, error) {
	msg, ok := secretbox.Open(nil, sealed, TCPNonce(c.senderOutbound, c.seq), c.key)
	if !ok {
		return nil, fmt.Errorf("open TCP message %d (%d bytes): authentication failed", c.seq, len(sealed))
	}
	c.seq++
	return msg, nil
}
