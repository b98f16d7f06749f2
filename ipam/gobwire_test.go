package ipam

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/seedf75a49c6/weave/internal/gobwire"
	"os"
	"strings"
	"testing"
)

// canonicalGob renders a gob stream with user type ids replaced by their
// order of definition, so streams from different processes compare equal.
func canonicalGob(t *testing.T, stream []byte) string {
	t.Helper()
	type msg struct {
		id   int64
		def  *wireDef
		body []byte
	}
	var msgs []msg
	order := map[int64]int{}
	r := &gobReader{gobwire.Reader{B: stream}}
	for len(r.B) > 0 && r.Err == nil {
		n := r.Uint()
		if r.Err != nil || uint64(len(r.B)) < n {
			t.Fatalf("truncated gob stream")
		}
		m := &gobReader{gobwire.Reader{B: r.B[:n]}}
		r.B = r.B[n:]
		id := m.Int()
		if id < 0 {
			d := m.wireType()
			order[-id] = len(order)
			msgs = append(msgs, msg{id: -id, def: &d})
		} else {
			msgs = append(msgs, msg{id: id, body: m.B})
		}
		if m.Err != nil {
			t.Fatalf("parse gob: %v", m.Err)
		}
	}
	ref := func(id int64) string {
		if o, ok := order[id]; ok {
			return fmt.Sprintf("u%d", o)
		}
		return fmt.Sprintf("b%d", id)
	}
	var sb strings.Builder
	for _, m := range msgs {
		if m.def != nil {
			var refs []string
			for _, x := range m.def.refs {
				refs = append(refs, ref(x))
			}
			fmt.Fprintf(&sb, "def %s %s %q fields=%v refs=%v\n", ref(m.id), m.def.kind, m.def.name, m.def.fields, refs)
			continue
		}
		fmt.Fprintf(&sb, "val %s %x\n", ref(m.id), m.body)
	}
	return sb.String()
}

type capturedMsg struct {
	Frame   int    `json:"frame"`
	Tag     int    `json:"tag"`
	SrcPeer string `json:"src_peer"`
	Hex     string `json:"hex"`
}

// loadCaptured returns the IPallocation payloads of the plain-ipam capture,
// unwrapped from the mesh envelope (length, tag, gob(channel, src, msg)).
func loadCaptured(t *testing.T) map[int][]byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/plain-ipam-ipallocation.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return loadCapturedFrom(t, raw)
}

func loadCapturedFrom(t testing.TB, raw []byte) map[int][]byte {
	t.Helper()
	out := map[int][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m capturedMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		raw, err := hex.DecodeString(m.Hex)
		if err != nil {
			t.Fatal(err)
		}
		dec := gob.NewDecoder(bytes.NewReader(raw[5:]))
		var channel string
		var src uint64
		var payload []byte
		if err := dec.Decode(&channel); err != nil || channel != "IPallocation" {
			t.Fatalf("frame %d: channel %q %v", m.Frame, channel, err)
		}
		if err := dec.Decode(&src); err != nil {
			t.Fatal(err)
		}
		if err := dec.Decode(&payload); err != nil {
			t.Fatal(err)
		}
		out[m.Frame] = payload
	}
	return out
}

// TestCapturedGossipRoundTrip decodes every IPallocation payload Weave 2.8.1
// sent and re-encodes it; the result must equal the capture byte for byte
// once type ids are renumbered. Go randomises map order (Nicknames, Paxos),
// so the encoding is retried until the random order matches.
func TestCapturedGossipRoundTrip(t *testing.T) {
	caps := loadCaptured(t)
	if len(caps) != 11 {
		t.Fatalf("want 11 captured IPallocation messages, got %d", len(caps))
	}
	for frame, payload := range caps {
		st, err := decodeState(payload)
		if err != nil {
			t.Fatalf("frame %d: %v", frame, err)
		}
		want := canonicalGob(t, payload)
		matched := false
		for try := 0; try < 200 && !matched; try++ {
			matched = canonicalGob(t, encodeState(st)) == want
		}
		if !matched {
			t.Errorf("frame %d: re-encoding differs:\nwant\n%s\ngot\n%s", frame, want, canonicalGob(t, encodeState(st)))
		}
	}
}

func TestCapturedConsensusContent(t *testing.T) {
	caps := loadCaptured(t)
	st, err := decodeState(caps[120])
	if err != nil {
		t.Fatal(err)
	}
	if st.Ring == nil || st.Ring.Start.String() != "10.32.0.0" || st.Ring.End.String() != "10.48.0.0" {
		t.Fatalf("ring %v", st.Ring)
	}
	got := st.Ring.String()
	want := "ring 10.32.0.0-10.48.0.0 peer aa:00:00:00:00:01 seeds [aa:00:00:00:00:01 aa:00:00:00:00:02]: " +
		"10.32.0.0->aa:00:00:00:00:01(v1,free 524287) 10.40.0.0->aa:00:00:00:00:02(v0,free 524288)"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if st.Nicknames[st.Ring.Seeds[1]] != "h2" {
		t.Fatalf("nicknames %v", st.Nicknames)
	}
	px, err := decodeState(caps[118])
	if err != nil {
		t.Fatal(err)
	}
	if len(px.Paxos) != 2 || px.Ring != nil {
		t.Fatalf("frame 118 paxos %v ring %v", px.Paxos, px.Ring)
	}
	for id, c := range px.Paxos {
		if id.Name == st.Ring.Seeds[0] && (c.Accepted.Round != 1 || len(c.AcceptedVal.Value) != 2) {
			t.Fatalf("h1 claims %+v", c)
		}
	}
}

// TestTruncatedCapturedPayloads: every prefix of a real payload is rejected
// with an error, never a panic.
func TestTruncatedCapturedPayloads(t *testing.T) {
	for frame, payload := range loadCaptured(t) {
		for n := 0; n < len(payload); n++ {
			if _, err := decodeState(payload[:n]); err == nil {
				t.Fatalf("frame %d: %d-byte prefix accepted", frame, n)
			}
		}
	}
}
