package sleeve

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/weaveworks/mesh"
)

// vectorFrame and vectorRecord mirror the fields of the Weave 2.8.1
// capture decodes (testdata/*.udp.jsonl, taken from the decoded packet
// captures of real 2.8.1 routers).
type vectorFrame struct {
	SrcPeer  string  `json:"src_peer"`
	DstPeer  string  `json:"dst_peer"`
	Len      int     `json:"len"`
	FrameHex *string `json:"frame_hex"`
	Desc     string  `json:"desc"`
}

type vectorRecord struct {
	Frames     []int         `json:"frames"`
	Hex        *string       `json:"hex"`
	Sender     string        `json:"sender"`
	UDPLen     int           `json:"udp_payload_len"`
	Unit       string        `json:"unit"`
	InDatagram []vectorFrame `json:"frames_in_datagram"`
	Seq        *uint64       `json:"seq"`
	DF         *int          `json:"df"`
	SealedLen  int           `json:"sealed_len"`
	PlainLen   int           `json:"plaintext_len"`
}

func loadVectors(t *testing.T, name string) []vectorRecord {
	t.Helper()
	fh, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("open vectors: %v", err)
	}
	defer fh.Close()
	var recs []vectorRecord
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r vectorRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("parse vector line: %v", err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read vectors: %v", err)
	}
	if len(recs) == 0 {
		t.Fatalf("no vectors in %s", name)
	}
	return recs
}

func mustPeer(t *testing.T, s string) mesh.PeerName {
	t.Helper()
	p, err := mesh.PeerNameFromString(s)
	if err != nil {
		t.Fatalf("peer name %q: %v", s, err)
	}
	return p
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex: %v", err)
	}
	return b
}

func TestPlainVectorsDecodeAndReencode(t *testing.T) {
	for _, file := range []string{"plain-ipam.udp.jsonl", "multihop.udp.jsonl"} {
		t.Run(file, func(t *testing.T) {
			recs := loadVectors(t, file)
			for _, r := range recs {
				checkPlainVector(t, r)
			}
			t.Logf("%d datagrams checked", len(recs))
		})
	}
}

func checkPlainVector(t *testing.T, r vectorRecord) {
	t.Helper()
	sender := mustPeer(t, r.Sender)
	enc := NewEncoder(sender, nil, false, false)
	enc.Begin()
	for _, vf := range r.InDatagram {
		src, dst := mustPeer(t, vf.SrcPeer), mustPeer(t, vf.DstPeer)
		if vf.FrameHex == nil {
			if !enc.AppendZero(src, dst, vf.Len, nil) {
				t.Fatalf("frames %v: zero frame of %d did not fit", r.Frames, vf.Len)
			}
			continue
		}
		if !enc.Append(src, dst, mustHex(t, *vf.FrameHex)) {
			t.Fatalf("frames %v: frame did not fit", r.Frames)
		}
	}
	got := enc.Seal()
	if len(got) != r.UDPLen {
		t.Fatalf("frames %v: re-encoded %d bytes, captured %d", r.Frames, len(got), r.UDPLen)
	}
	if r.Hex == nil {
		return
	}
	want := mustHex(t, *r.Hex)
	if !bytes.Equal(got, want) {
		t.Fatalf("frames %v: re-encoded\n%x\nwant\n%x", r.Frames, got, want)
	}
	if PeerNameAt(want) != sender {
		t.Fatalf("frames %v: sender %v, want %v", r.Frames, PeerNameAt(want), sender)
	}
	it := NewFrameIter(want[NameSize:])
	i := 0
	for ; it.Next(); i++ {
		vf := r.InDatagram[i]
		if it.Src != mustPeer(t, vf.SrcPeer) || it.Dst != mustPeer(t, vf.DstPeer) || len(it.Frame) != vf.Len {
			t.Fatalf("frames %v #%d: got %v %v %d", r.Frames, i, it.Src, it.Dst, len(it.Frame))
		}
		if !bytes.Equal(it.Frame, mustHex(t, *vf.FrameHex)) {
			t.Fatalf("frames %v #%d: frame bytes differ", r.Frames, i)
		}
	}
	if it.Err() != nil || i != len(r.InDatagram) {
		t.Fatalf("frames %v: decoded %d frames, err %v", r.Frames, i, it.Err())
	}
}

func TestEncryptedVectorsParse(t *testing.T) {
	recs := loadVectors(t, "encrypted.udp.jsonl")
	dfSeen, nonDFSeen := 0, 0
	for _, r := range recs {
		if r.Hex == nil || r.Seq == nil || r.DF == nil {
			if r.UDPLen != SealedOverhead+FrameOverhead+fragTestLen {
				t.Fatalf("frames %v: hex-less record of %d bytes is not a frag test", r.Frames, r.UDPLen)
			}
			continue
		}
		d := mustHex(t, *r.Hex)
		h, err := ParseSealed(d)
		if err != nil {
			t.Fatalf("frames %v: %v", r.Frames, err)
		}
		// Records over 2048 bytes (fragmentation tests) carry only a prefix.
		sealedLen := len(h.Sealed)
		if len(d) != r.UDPLen {
			sealedLen = r.UDPLen - NameSize - SeqSize
		}
		if h.Sender != mustPeer(t, r.Sender) || h.Seq != *r.Seq || h.DF != (*r.DF == 1) || sealedLen != r.SealedLen {
			t.Fatalf("frames %v: parsed sender %v seq %d df %v sealed %d, want seq %d df %d sealed %d",
				r.Frames, h.Sender, h.Seq, h.DF, sealedLen, *r.Seq, *r.DF, r.SealedLen)
		}
		if r.PlainLen != 0 && sealedLen-16 != r.PlainLen {
			t.Fatalf("frames %v: plaintext %d, want %d", r.Frames, sealedLen-16, r.PlainLen)
		}
		if h.DF {
			dfSeen++
		} else {
			nonDFSeen++
		}
	}
	if dfSeen == 0 || nonDFSeen == 0 {
		t.Fatalf("expected both channels in the capture: df %d non-df %d", dfSeen, nonDFSeen)
	}
}
