package sleeve

import (
	"bytes"
	"net/netip"
	"slices"
	"testing"
)

// FuzzDecodeDatagram checks that arbitrary plaintext datagrams never make
// the decoder panic and that whatever decodes re-encodes to the same bytes.
func FuzzDecodeDatagram(f *testing.F) {
	enc := NewEncoder(peerA, nil, false, false)
	enc.Begin()
	enc.Append(peerA, peerB, testFrame[:60])
	enc.AppendZero(peerA, peerB, heartbeatLen, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(bytes.Clone(enc.Seal()))
	f.Add([]byte{0xaa, 0, 0, 0, 0, 1, 0xaa})
	f.Fuzz(func(t *testing.T, d []byte) {
		if len(d) < NameSize {
			return
		}
		it := NewFrameIter(d[NameSize:])
		re := NewEncoder(PeerNameAt(d), nil, false, false)
		re.Begin()
		for it.Next() {
			if !re.Append(it.Src, it.Dst, it.Frame) {
				t.Fatalf("decoded frame of %d bytes does not re-encode", len(it.Frame))
			}
		}
		if it.Err() != nil {
			return
		}
		if got := re.Seal(); !bytes.Equal(got, d) {
			t.Fatalf("re-encoded %x, want %x", got, d)
		}
	})
}

// FuzzOpenDatagram checks that arbitrary (possibly forged) encrypted
// datagrams never make the opener panic or authenticate.
func FuzzOpenDatagram(f *testing.F) {
	enc := NewEncoder(peerA, &testKey, true, true)
	enc.Begin()
	enc.Append(peerA, peerB, testFrame[:60])
	valid := bytes.Clone(enc.Seal())
	f.Add(valid)
	f.Add(valid[:SealedOverhead])
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, d []byte) {
		o := NewOpener(&testKey, true)
		plain, err := o.Open(make([]byte, 65536), d)
		if err != nil {
			return
		}
		// The sender name travels in clear and is not authenticated
		// (it only selects the forwarder); everything after it is.
		if len(d) < NameSize || !bytes.Equal(d[NameSize:], valid[NameSize:]) {
			t.Fatalf("forged datagram %x authenticated", d)
		}
		it := NewFrameIter(plain)
		for it.Next() {
		}
		if it.Err() != nil {
			t.Fatalf("valid datagram did not decode: %v", it.Err())
		}
	})
}

// FuzzOpenAEADDatagram is FuzzOpenDatagram for the negotiated AEADs: no
// panic, and nothing but the valid datagram authenticates (here the
// sender is authenticated too). Byte 0 of the input picks the cipher.
func FuzzOpenAEADDatagram(f *testing.F) {
	ciphers := []Cipher{CipherAES256GCM, CipherChaCha20Poly1305}
	valid := make([][]byte, len(ciphers))
	for i, c := range ciphers {
		enc, err := NewEncoderCipher(peerA, &testKey, c, true, true)
		if err != nil {
			f.Fatal(err)
		}
		enc.Begin()
		enc.Append(peerA, peerB, testFrame[:60])
		valid[i] = bytes.Clone(enc.Seal())
		f.Add(append([]byte{byte(i)}, valid[i]...))
		f.Add(append([]byte{byte(i)}, valid[i][:SealedOverhead]...))
	}
	f.Add([]byte{0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		i := int(in[0]) % len(ciphers)
		d := bytes.Clone(in[1:])
		o, err := NewOpenerCipher(&testKey, ciphers[i], true)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := o.Open(nil, d)
		if err != nil {
			return
		}
		if !bytes.Equal(in[1:], valid[i]) {
			t.Fatalf("forged %v datagram %x authenticated", ciphers[i], in[1:])
		}
		it := NewFrameIter(plain)
		for it.Next() {
		}
		if it.Err() != nil {
			t.Fatalf("valid datagram did not decode: %v", it.Err())
		}
	})
}

// FuzzReceiveSealedSegment feeds arbitrary datagrams to the encrypted
// segment receive path of a forwarder that negotiated segmented framing,
// between valid segments of one frame: nothing panics, a forged datagram
// never authenticates, and the genuine frame still comes out intact.
func FuzzReceiveSealedSegment(f *testing.F) {
	a, err := newAEAD(bestCipher(), &testKey)
	if err != nil {
		f.Fatal(err)
	}
	enc := newSegEncoder(peerA, a, true)
	frame := patterned(4000)
	run, _ := enc.fill(peerA, peerB, enc.begin(), frame, 0, 1472)
	var segs [][]byte
	for s := 0; s < len(run); s += 1472 {
		segs = append(segs, bytes.Clone(run[s:min(s+1472, len(run))]))
	}
	for _, s := range segs {
		f.Add(s)
		f.Add(s[:sealedSegOverhead])
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		h := newFakeHandler()
		op, err := NewOpenerCipher(&testKey, bestCipher(), true)
		if err != nil {
			t.Fatal(err)
		}
		fw := &forwarder{o: &Overlay{cfg: Config{Handler: h}}, opener: op, peerSeg: true}
		fw.receive(segs[0], netip.AddrPort{}, nil)
		if len(d) >= NameSize { // handleDatagram drops anything shorter
			fw.receive(bytes.Clone(d), netip.AddrPort{}, nil)
		}
		for _, s := range segs[1:] {
			fw.receive(bytes.Clone(s), netip.AddrPort{}, nil)
		}
		genuine := slices.ContainsFunc(segs, func(s []byte) bool { return bytes.Equal(s, d) })
		select {
		case got := <-h.ch:
			if !bytes.Equal(got.frame, frame) {
				t.Fatalf("frame of %d bytes came out as %d bytes or corrupted", len(frame), len(got.frame))
			}
		default:
			// Only a genuine segment out of order may cost the frame.
			if !genuine {
				t.Fatalf("the genuine frame was lost to a forged datagram %x", d)
			}
		}
		if n := fw.cnt.RxFrames.Load(); n > 1 {
			t.Fatalf("%d frames from one frame's segments", n)
		}
	})
}
