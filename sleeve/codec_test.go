package sleeve

import (
	"bytes"
	"errors"
	"testing"

	"github.com/weaveworks/mesh"
)

func TestPeerNameWireForm(t *testing.T) {
	var b [6]byte
	PutPeerName(b[:], mesh.PeerName(0xaa00000000c3))
	if b != [6]byte{0xaa, 0, 0, 0, 0, 0xc3} {
		t.Fatalf("wire form %x", b)
	}
	if got := PeerNameAt(b[:]); got.String() != "aa:00:00:00:00:c3" {
		t.Fatalf("decoded %v", got)
	}
}

func TestEncoderPacksSeveralFramesAndRespectsLimit(t *testing.T) {
	enc := NewEncoder(peerA, nil, false, false)
	enc.SetLimit(PlainOverhead + 2*(FrameOverhead+100) + 10)
	enc.Begin()
	f1, f2 := bytes.Repeat([]byte{1}, 100), bytes.Repeat([]byte{2}, 100)
	if !enc.Append(peerA, peerB, f1) || !enc.Append(peerB, peerA, f2) {
		t.Fatal("two frames should fit")
	}
	if enc.Append(peerA, peerB, []byte{3}) {
		t.Fatal("third frame must not fit the limit")
	}
	if enc.Frames() != 2 {
		t.Fatalf("Frames() = %d", enc.Frames())
	}
	d := enc.Seal()
	it := NewFrameIter(d[NameSize:])
	var got [][]byte
	for it.Next() {
		got = append(got, bytes.Clone(it.Frame))
	}
	if it.Err() != nil || len(got) != 2 || !bytes.Equal(got[0], f1) || !bytes.Equal(got[1], f2) {
		t.Fatalf("decoded %d frames, err %v", len(got), it.Err())
	}
	enc.Begin()
	if n := len(enc.Seal()); n != NameSize {
		t.Fatalf("empty datagram after Begin has %d bytes", n)
	}
}

func TestFrameIterRejectsTruncation(t *testing.T) {
	enc := NewEncoder(peerA, nil, false, false)
	enc.Begin()
	enc.Append(peerA, peerB, testFrame)
	d := enc.Seal()
	for _, cut := range []int{1, 10, FrameOverhead + 5, len(d) - NameSize - 1} {
		it := NewFrameIter(d[NameSize : NameSize+cut])
		for it.Next() {
			t.Fatalf("cut %d: a frame was returned", cut)
		}
		if !errors.Is(it.Err(), ErrTruncated) {
			t.Fatalf("cut %d: err %v, want ErrTruncated", cut, it.Err())
		}
	}
	if _, err := ParseSealed(make([]byte, SealedOverhead-1)); !errors.Is(err, ErrTruncated) {
		t.Fatalf("short sealed datagram: %v", err)
	}
}

func TestIPv4HeaderDetection(t *testing.T) {
	frame := ipv4Frame(3000, false, 0)
	ihl, df, ok := ipv4Header(frame)
	if !ok || df || ihl != 20 {
		t.Fatalf("ipv4Header = %d %v %v", ihl, df, ok)
	}
	if _, df, _ := ipv4Header(ipv4Frame(100, true, 0)); !df {
		t.Fatal("DF not detected")
	}
	if _, _, ok := ipv4Header(append([]byte{}, testFrame...)); ok {
		t.Fatal("non-IPv4 frame detected as IPv4")
	}
}

// ipv4Frame builds an Ethernet+IPv4 frame with an IP total length of
// ipLen bytes, payload bytes = their offset mod 251.
func ipv4Frame(ipLen int, df bool, fragOff int) []byte {
	f := make([]byte, ethHeaderLen+ipLen)
	copy(f, []byte{2, 0, 0, 0, 0, 0xc2, 2, 0, 0, 0, 0, 0xc1, 0x08, 0x00})
	ip := f[ethHeaderLen:]
	ip[0] = 0x45
	ip[2], ip[3] = byte(ipLen>>8), byte(ipLen)
	fl := uint16(fragOff / 8)
	if df {
		fl |= ipFlagDF
	}
	ip[6], ip[7] = byte(fl>>8), byte(fl)
	ip[8], ip[9] = 64, 17
	copy(ip[12:], []byte{10, 40, 0, 1, 10, 40, 0, 2})
	cs := ipChecksum(ip[:20])
	ip[10], ip[11] = byte(cs>>8), byte(cs)
	for i := 20; i < ipLen; i++ {
		ip[i] = byte(i % 251)
	}
	return f
}
