package sleeve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/weaveworks/mesh"
	"golang.org/x/crypto/nacl/secretbox"
)

var (
	testKey   = [32]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	peerA     = mesh.PeerName(0xaa0000000001)
	peerB     = mesh.PeerName(0xaa0000000002)
	peerC     = mesh.PeerName(0xaa0000000003)
	testFrame = bytes.Repeat([]byte{0x5a}, 1400)
)

func TestNonceLayout(t *testing.T) {
	var n [24]byte
	makeNonce(&n, true, dfBit|0x0102030405060708&^dfBit)
	want := [24]byte{0x80}
	copy(want[16:], []byte{0x81, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08})
	if n != want {
		t.Fatalf("outbound DF nonce %x, want %x", n, want)
	}
	makeNonce(&n, false, 5)
	want = [24]byte{}
	want[23] = 5
	if n != want {
		t.Fatalf("inbound nonce %x, want %x", n, want)
	}
	if n[0]&0x40 != 0 {
		t.Fatal("bit 6 (TCP nonce bit) must be clear")
	}
}

// TestSealMatchesManualSecretbox pins the datagram layout to a secretbox
// built by hand from the documented nonce.
func TestSealMatchesManualSecretbox(t *testing.T) {
	for _, outbound := range []bool{false, true} {
		for _, df := range []bool{false, true} {
			enc := NewEncoder(peerA, &testKey, outbound, df)
			enc.Begin()
			enc.Append(peerA, peerB, testFrame)
			_ = enc.Seal() // seq 0
			enc.Begin()
			enc.Append(peerA, peerB, testFrame)
			got := enc.Seal() // seq 1
			seqField := uint64(1)
			if df {
				seqField |= dfBit
			}
			var nonce [24]byte
			if outbound {
				nonce[0] = 0x80
			}
			binary.BigEndian.PutUint64(nonce[16:], seqField)
			plain := make([]byte, 0, FrameOverhead+len(testFrame))
			plain = append(plain, 0xaa, 0, 0, 0, 0, 1, 0xaa, 0, 0, 0, 0, 2, 0x05, 0x78)
			plain = append(plain, testFrame...)
			want := []byte{0xaa, 0, 0, 0, 0, 1}
			want = binary.BigEndian.AppendUint64(want, seqField)
			want = secretbox.Seal(want, plain, &nonce, &testKey)
			if !bytes.Equal(got, want) {
				t.Fatalf("outbound=%v df=%v: sealed datagram differs from manual secretbox", outbound, df)
			}
		}
	}
}

func TestSealOpenRoundTripBothPolarities(t *testing.T) {
	for _, outbound := range []bool{false, true} {
		enc := NewEncoder(peerA, &testKey, outbound, true)
		enc.Begin()
		enc.Append(peerA, peerB, testFrame)
		enc.AppendZero(peerA, peerB, heartbeatLen, []byte{1, 2, 3, 4, 5, 6, 7, 8})
		d := enc.Seal()
		if len(d) != SealedOverhead+2*FrameOverhead+len(testFrame)+heartbeatLen {
			t.Fatalf("sealed length %d", len(d))
		}
		right := NewOpener(&testKey, outbound)
		plain, err := right.Open(make([]byte, 65536), d)
		if err != nil {
			t.Fatalf("outbound=%v: open: %v", outbound, err)
		}
		it := NewFrameIter(plain)
		if !it.Next() || !bytes.Equal(it.Frame, testFrame) || it.Src != peerA || it.Dst != peerB {
			t.Fatalf("first frame wrong: %v", it.Err())
		}
		if !it.Next() || !isSpecial(it.Frame) || binary.BigEndian.Uint64(it.Frame[14:]) != 0x0102030405060708 {
			t.Fatal("heartbeat frame wrong")
		}
		if it.Next() || it.Err() != nil {
			t.Fatalf("trailing frames or error: %v", it.Err())
		}
		wrong := NewOpener(&testKey, !outbound)
		if _, err := wrong.Open(make([]byte, 65536), d); !errors.Is(err, ErrAuth) {
			t.Fatalf("opening with the wrong polarity: err %v, want ErrAuth", err)
		}
	}
}

func TestIndependentChannelCounters(t *testing.T) {
	df := NewEncoder(peerA, &testKey, true, true)
	nonDF := NewEncoder(peerA, &testKey, true, false)
	for i := 0; i < 3; i++ {
		df.Begin()
		df.Seal()
	}
	nonDF.Begin()
	h, err := ParseSealed(nonDF.Seal())
	if err != nil || h.Seq != 0 || h.DF {
		t.Fatalf("non-DF first datagram: %+v %v", h, err)
	}
	df.Begin()
	h, err = ParseSealed(df.Seal())
	if err != nil || h.Seq != 3 || !h.DF {
		t.Fatalf("DF fourth datagram: seq %d df %v err %v", h.Seq, h.DF, err)
	}
	// The same number on both channels is not a replay.
	o := NewOpener(&testKey, true)
	a := NewEncoder(peerA, &testKey, true, true)
	b := NewEncoder(peerA, &testKey, true, false)
	a.Begin()
	b.Begin()
	buf := make([]byte, 65536)
	if _, err := o.Open(buf, a.Seal()); err != nil {
		t.Fatalf("DF seq 0: %v", err)
	}
	if _, err := o.Open(buf, b.Seal()); err != nil {
		t.Fatalf("non-DF seq 0 after DF seq 0: %v", err)
	}
}

func TestOpenerDropsReplayAfterAuth(t *testing.T) {
	enc := NewEncoder(peerA, &testKey, false, false)
	enc.Begin()
	d := bytes.Clone(enc.Seal())
	o := NewOpener(&testKey, false)
	buf := make([]byte, 65536)
	if _, err := o.Open(buf, d); err != nil {
		t.Fatalf("first open: %v", err)
	}
	if _, err := o.Open(buf, d); !errors.Is(err, ErrReplay) {
		t.Fatalf("duplicate: err %v, want ErrReplay", err)
	}
	// A forged datagram with a fresh seq must fail auth and not burn the seq.
	forged := bytes.Clone(d)
	binary.BigEndian.PutUint64(forged[NameSize:], 7)
	if _, err := o.Open(buf, forged); !errors.Is(err, ErrAuth) {
		t.Fatalf("forged: err %v, want ErrAuth", err)
	}
	if !o.nonDF.Check(7) {
		t.Fatal("failed authentication must not mark seq 7 seen")
	}
}

func TestReplayWindow(t *testing.T) {
	w := NewReplayWindow()
	steps := []struct {
		seq  uint64
		want bool
	}{
		{0, true}, {0, false}, {5, true}, {3, true}, {5, false},
		{windowSize + 1, true}, // next window: previous window still valid
		{4, true}, {3, false},
		{2*windowSize + 2, true}, // window 2: window 0 now too old
		{6, false},
		{windowSize + 7, true}, {windowSize + 1, false},
		{10 * windowSize, true}, // far-future jump clears everything
		{2*windowSize + 2, false}, {9*windowSize + 2, true}, {10 * windowSize, false},
		{10*windowSize + 1, true},
	}
	for i, s := range steps {
		if got := w.Check(s.seq); got != s.want {
			t.Fatalf("step %d: Check(%d) = %v, want %v", i, s.seq, got, s.want)
		}
	}
}

func TestEncryptedFragTestLength(t *testing.T) {
	enc := NewEncoder(peerB, &testKey, true, false)
	enc.Begin()
	if !enc.AppendZero(peerB, peerA, fragTestLen, nil) {
		t.Fatal("frag test did not fit")
	}
	if n := len(enc.Seal()); n != 60045 {
		t.Fatalf("encrypted frag test datagram %d bytes, captured 60045", n)
	}
}
