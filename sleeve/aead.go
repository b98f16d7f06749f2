package sleeve

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/sys/cpu"
)

// CipherFeature is the mesh connection feature by which two of our routers
// agree on a faster datagram cipher than Weave's NaCl secretbox. Its value
// lists the AEADs the sender supports, space-separated. Weave 2.8.1 never
// sets it, so links to Weave peers keep secretbox.
const CipherFeature = "SleeveCiphers"

// Cipher is the AEAD that seals the datagrams of one connection.
type Cipher uint8

// The ciphers, in our order of preference after CipherSecretbox.
const (
	// CipherSecretbox is Weave 2.8.1's NaCl secretbox (XSalsa20-Poly1305).
	CipherSecretbox Cipher = iota
	// CipherAES256GCM is AES-256-GCM, offered only where the CPU has AES
	// and carry-less multiply instructions.
	CipherAES256GCM
	// CipherChaCha20Poly1305 is ChaCha20-Poly1305 (RFC 8439).
	CipherChaCha20Poly1305
)

var cipherNames = [...]string{"secretbox", "aes256gcm", "chacha20poly1305"}

func (c Cipher) String() string {
	if int(c) < len(cipherNames) {
		return cipherNames[c]
	}
	return fmt.Sprintf("cipher(%d)", uint8(c))
}

// hasAESHardware reports whether AES-GCM runs in hardware here.
func hasAESHardware() bool {
	return (cpu.X86.HasAES && cpu.X86.HasPCLMULQDQ) || (cpu.ARM64.HasAES && cpu.ARM64.HasPMULL)
}

// offeredCiphers is the CipherFeature value we advertise.
func offeredCiphers() string {
	if hasAESHardware() {
		return CipherAES256GCM.String() + " " + CipherChaCha20Poly1305.String()
	}
	return CipherChaCha20Poly1305.String()
}

// chooseCipher picks the cipher for a connection from the two offers
// (CipherFeature values; "" when absent): the first of AES-256-GCM and
// ChaCha20-Poly1305 that both offer, else secretbox. Both ends compute
// the same answer from the same two offers.
func chooseCipher(ours, theirs string) Cipher {
	has := func(list string, c Cipher) bool {
		for _, f := range strings.Fields(list) {
			if f == c.String() {
				return true
			}
		}
		return false
	}
	for _, c := range []Cipher{CipherAES256GCM, CipherChaCha20Poly1305} {
		if has(ours, c) && has(theirs, c) {
			return c
		}
	}
	return CipherSecretbox
}

// newAEAD returns the AEAD for c keyed from the mesh session key. The key
// is derived (HMAC-SHA256 of the cipher's name under the session key) so
// that no key is ever used by two different ciphers; the session key is
// fresh per mesh connection, and so is the derived key.
func newAEAD(c Cipher, sessionKey *[32]byte) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, sessionKey[:])
	m.Write([]byte("weave sleeve datagram key " + c.String()))
	key := m.Sum(nil)
	switch c {
	case CipherAES256GCM:
		b, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("create AES cipher: %w", err)
		}
		a, err := cipher.NewGCM(b)
		if err != nil {
			return nil, fmt.Errorf("create GCM: %w", err)
		}
		return a, nil
	case CipherChaCha20Poly1305:
		a, err := chacha20poly1305.New(key)
		if err != nil {
			return nil, fmt.Errorf("create ChaCha20-Poly1305: %w", err)
		}
		return a, nil
	}
	return nil, fmt.Errorf("new AEAD %s: not an AEAD cipher", c)
}

// aeadNonce fills the 12-byte AEAD nonce: byte 0 = 0x80 when the sender's
// mesh connection is outbound (the two directions share the key), bytes
// 4..11 = seqNoAndDF (per-channel counter; bit 63 = DF channel). A nonce is
// therefore never reused under one key.
func aeadNonce(n *[12]byte, senderOutbound bool, seqNoAndDF uint64) {
	clear(n[:4])
	if senderOutbound {
		n[0] = 0x80
	}
	binary.BigEndian.PutUint64(n[4:], seqNoAndDF)
}
