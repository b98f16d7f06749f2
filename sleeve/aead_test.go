package sleeve

import (
	"bytes"
	"errors"
	"testing"
)

func TestChooseCipher(t *testing.T) {
	for _, tc := range []struct {
		ours, theirs string
		want         Cipher
	}{
		{"aes256gcm chacha20poly1305", "aes256gcm chacha20poly1305", CipherAES256GCM},
		{"aes256gcm chacha20poly1305", "chacha20poly1305 aes256gcm", CipherAES256GCM},
		{"chacha20poly1305", "aes256gcm chacha20poly1305", CipherChaCha20Poly1305},
		{"aes256gcm", "chacha20poly1305", CipherSecretbox},
		{"aes256gcm chacha20poly1305", "", CipherSecretbox}, // a Weave 2.8.1 peer
		{"", "aes256gcm chacha20poly1305", CipherSecretbox}, // NoFastCipher
		{"aes256gcm", "AES256GCM rot13", CipherSecretbox},
	} {
		if got := chooseCipher(tc.ours, tc.theirs); got != tc.want {
			t.Errorf("chooseCipher(%q, %q) = %v, want %v", tc.ours, tc.theirs, got, tc.want)
		}
		if got := chooseCipher(tc.theirs, tc.ours); got != tc.want {
			t.Errorf("not symmetric: chooseCipher(%q, %q) = %v, want %v", tc.theirs, tc.ours, got, tc.want)
		}
	}
}

func TestAEADNonceLayout(t *testing.T) {
	var n [12]byte
	aeadNonce(&n, true, dfBit|7)
	if want := [12]byte{0x80, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 7}; n != want {
		t.Fatalf("outbound DF nonce %x, want %x", n, want)
	}
	aeadNonce(&n, false, 7)
	if want := [12]byte{11: 7}; n != want {
		t.Fatalf("inbound nonce %x, want %x", n, want)
	}
}

// TestAEADSealOpen checks both AEADs: round trip in both polarities, the
// header (sender, sequence number) is authenticated, replays and the wrong
// polarity or cipher are refused, and two datagrams never share bytes of
// keystream (same plaintext, different ciphertext).
func TestAEADSealOpen(t *testing.T) {
	for _, c := range []Cipher{CipherAES256GCM, CipherChaCha20Poly1305} {
		t.Run(c.String(), func(t *testing.T) {
			for _, outbound := range []bool{false, true} {
				enc := mustEncoder(t, c, outbound, true)
				o := mustOpener(t, c, outbound)
				d0 := sealOne(enc, testFrame)
				d1 := sealOne(enc, testFrame)
				if len(d1) != SealedOverhead+FrameOverhead+len(testFrame) {
					t.Fatalf("datagram %d bytes, want %d", len(d1), SealedOverhead+FrameOverhead+len(testFrame))
				}
				if bytes.Equal(d0[NameSize+SeqSize:], d1[NameSize+SeqSize:]) {
					t.Fatal("two seals of the same frame gave the same ciphertext: nonce reused")
				}
				for i, mutate := range []func(d []byte){
					func(d []byte) { d[0] ^= 1 },                  // sender
					func(d []byte) { d[NameSize+SeqSize-1] ^= 1 }, // sequence number
					func(d []byte) { d[NameSize] ^= 0x80 },        // DF bit
					func(d []byte) { d[len(d)-1] ^= 1 },           // tag
				} {
					bad := bytes.Clone(d1)
					mutate(bad)
					if _, err := o.Open(nil, bad); !errors.Is(err, ErrAuth) {
						t.Fatalf("mutation %d: %v, want ErrAuth", i, err)
					}
				}
				p, err := o.Open(nil, bytes.Clone(d1))
				if err != nil {
					t.Fatal(err)
				}
				it := NewFrameIter(p)
				if !it.Next() || it.Src != peerA || it.Dst != peerB || !bytes.Equal(it.Frame, testFrame) {
					t.Fatal("decrypted frame differs")
				}
				if _, err := o.Open(nil, bytes.Clone(d1)); !errors.Is(err, ErrReplay) {
					t.Fatalf("replay: %v, want ErrReplay", err)
				}
				if _, err := mustOpener(t, c, !outbound).Open(nil, bytes.Clone(d0)); !errors.Is(err, ErrAuth) {
					t.Fatalf("wrong polarity: %v, want ErrAuth", err)
				}
				other := CipherAES256GCM + CipherChaCha20Poly1305 - c
				if _, err := mustOpener(t, other, outbound).Open(nil, bytes.Clone(d0)); !errors.Is(err, ErrAuth) {
					t.Fatalf("wrong cipher: %v, want ErrAuth", err)
				}
				if _, err := NewOpener(&testKey, outbound).Open(make([]byte, 65536), bytes.Clone(d0)); !errors.Is(err, ErrAuth) {
					t.Fatalf("secretbox opener on an AEAD datagram: %v, want ErrAuth", err)
				}
			}
		})
	}
}

func TestAEADSealDoesNotAllocate(t *testing.T) {
	for _, c := range []Cipher{CipherAES256GCM, CipherChaCha20Poly1305} {
		enc := mustEncoder(t, c, true, false)
		o := mustOpener(t, c, true)
		buf := make([]byte, MaxUDPPayload)
		if n := testing.AllocsPerRun(100, func() {
			enc.Begin()
			enc.Append(peerA, peerB, testFrame)
			d := enc.Seal()
			if _, err := o.Open(nil, buf[:copy(buf, d)]); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%v: %.1f allocations per seal+open, want 0", c, n)
		}
	}
}

func mustEncoder(t *testing.T, c Cipher, outbound, df bool) *Encoder {
	t.Helper()
	e, err := NewEncoderCipher(peerA, &testKey, c, outbound, df)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustOpener(t *testing.T, c Cipher, senderOutbound bool) *Opener {
	t.Helper()
	o, err := NewOpenerCipher(&testKey, c, senderOutbound)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func sealOne(e *Encoder, frame []byte) []byte {
	e.Begin()
	e.Append(peerA, peerB, frame)
	return bytes.Clone(e.Seal())
}
