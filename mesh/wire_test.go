package mesh

import (
	"bytes"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/seedf75a49c6/weave/internal/gobwire"
	"maps"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"testing"
)

const (
	gobHelperEnv   = "WEAVE_MESH_GOB_HELPER"
	emfileChildEnv = "WEAVE_MESH_EMFILE_CHILD"
)

func TestMain(m *testing.M) {
	if os.Getenv(gobHelperEnv) != "" {
		if err := runGobHelper(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	if port := os.Getenv(emfileChildEnv); port != "" {
		runEMFILEChild(port)
	}
	if port := os.Getenv(panicChildEnv); port != "" {
		runPanicChild(port)
	}
	if port := os.Getenv(attackChildEnv); port != "" {
		runAttackChild(port)
	}
	os.Exit(m.Run())
}

func TestVectorsCoverEveryTCPUnit(t *testing.T) {
	counts := map[string]int{}
	for _, v := range loadTCPVectors(t) {
		key := v.Unit
		if v.Tag != nil {
			key = fmt.Sprintf("tag%d/%s", *v.Tag, v.Channel)
		}
		counts[key]++
	}
	for _, k := range []string{"protocol-header", "encryption-flag", "features", "tag0/", "tag4/topology",
		"tag4/IPallocation", "tag6/IPallocation", "tag7/", "encryption-flag+pubkey", "sealed-message"} {
		if counts[k] == 0 {
			t.Errorf("no vector of kind %s (have %v)", k, counts)
		}
	}
}

func TestVectorProtocolHeaderAndFlag(t *testing.T) {
	for _, v := range loadTCPVectors(t) {
		raw := v.raw(t)
		switch v.Unit {
		case "protocol-header":
			lo, hi, err := DecodeProtocolHeader(raw)
			if err != nil || int(lo) != v.MinVersion || int(hi) != v.MaxVersion || lo != 1 || hi != 2 {
				t.Errorf("%v: got (%d,%d,%v), want (%d,%d)", v, lo, hi, err, v.MinVersion, v.MaxVersion)
			}
			equalBytes(t, v.String(), EncodeProtocolHeader(lo, hi), raw)
		case "encryption-flag+pubkey":
			if v.Flag == nil || *v.Flag != 1 || len(raw) != 33 || raw[0] != 1 || hex.EncodeToString(raw[1:]) != v.PublicKey {
				t.Errorf("%v: flag+key bytes %x, recorded flag %v key %s", v, raw, v.Flag, v.PublicKey)
			}
		case "encryption-flag":
			if v.Flag == nil || len(raw) != 1 || int(raw[0]) != *v.Flag || raw[0] != 0 {
				t.Errorf("%v: flag bytes %x, recorded %v", v, raw, v.Flag)
			}
		}
	}
}

// frameBody checks the V2 framing of a record and returns its body.
func frameBody(t *testing.T, v vector) []byte {
	t.Helper()
	raw := v.raw(t)
	body, rest, err := DecodeFrame(raw)
	if err != nil || len(rest) != 0 || len(body) != v.LengthPrefix {
		t.Fatalf("%v: DecodeFrame: len %d rest %d err %v, want len %d", v, len(body), len(rest), err, v.LengthPrefix)
	}
	again, err := EncodeFrame(body)
	if err != nil {
		t.Fatal(err)
	}
	equalBytes(t, v.String()+" framing", again, raw)
	return body
}

// TestVectorSealedFraming checks the encrypted capture: the length prefix
// stays in clear and every body is a secretbox (plaintext + 16 bytes).
func TestVectorSealedFraming(t *testing.T) {
	n := 0
	for _, v := range loadTCPVectors(t) {
		if v.Unit != "sealed-message" {
			continue
		}
		n++
		body := frameBody(t, v)
		if len(body) != v.SealedLen || v.SealedLen != v.PlaintextLen+SealOverhead || v.PlaintextLen < 1 {
			t.Errorf("%v: body %d, sealed %d, plaintext %d", v, len(body), v.SealedLen, v.PlaintextLen)
		}
	}
	if n != 20 {
		t.Errorf("checked %d sealed messages, want 20", n)
	}
}

func TestVectorFeatures(t *testing.T) {
	n := 0
	for _, v := range loadTCPVectors(t) {
		if v.Unit != "features" {
			continue
		}
		n++
		body := frameBody(t, v)
		m, err := DecodeFeatures(body) // encoding/gob
		if err != nil || !maps.Equal(m, v.Features) {
			t.Fatalf("%v: gob decode %v (%v), want %v", v, m, err, v.Features)
		}
		for _, k := range []string{"PeerNameFlavour", "Name", "NickName", "ShortID", "UID", "ConnID", "Overlays"} {
			if m[k] == "" {
				t.Errorf("%v: feature %s missing", v, k)
			}
		}
		if m["PeerNameFlavour"] != "mac" {
			t.Errorf("%v: flavour %q", v, m["PeerNameFlavour"])
		}
		lay, m2, err := ParseFeaturesLayout(body)
		if err != nil || !maps.Equal(m2, m) || lay.TypeID != v.typeID(t, "map[string]string") {
			t.Fatalf("%v: layout %+v map %v err %v", v, lay, m2, err)
		}
		again, err := EncodeFeaturesOrdered(m, lay)
		if err != nil {
			t.Fatal(err)
		}
		equalBytes(t, v.String()+" features re-encode", again, body)
		// Cross-check the hand codec against encoding/gob both ways.
		viaGob, err := EncodeFeatures(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, m3, err := ParseFeaturesLayout(viaGob); err != nil || !maps.Equal(m3, m) {
			t.Errorf("%v: hand parser on gob output: %v %v", v, m3, err)
		}
	}
	if n != 6 {
		t.Errorf("checked %d features vectors, want 6", n)
	}
}

func TestVectorMessages(t *testing.T) {
	var topo []vector
	for _, v := range loadTCPVectors(t) {
		if v.Unit != "message" {
			continue
		}
		body := frameBody(t, v)
		if v.Tag == nil || int(body[0]) != *v.Tag {
			t.Fatalf("%v: tag byte %d, recorded %v", v, body[0], v.Tag)
		}
		switch tag := body[0]; {
		case tag == TagHeartbeat:
			if len(body) != 1 {
				t.Errorf("%v: heartbeat body %x", v, body)
			}
		case tag == TagOverlayControl:
			checkControl(t, v, body[1:])
		case IsGossipTag(tag):
			env := checkEnvelope(t, v, tag, body[1:])
			if env.Channel == "topology" {
				got, err := DecodeTopology(env.Msg)
				if err != nil || !reflect.DeepEqual(got, v.toTopology(t)) {
					t.Fatalf("%v: topology %+v (%v), want %+v", v, got, err, v.toTopology(t))
				}
				topo = append(topo, v)
			}
		default:
			t.Errorf("%v: unexpected tag %d", v, tag)
		}
	}
	if len(topo) != 27 {
		t.Errorf("checked %d topology vectors, want 27", len(topo))
	}
}

func checkControl(t *testing.T, v vector, p []byte) {
	t.Helper()
	want, _ := hex.DecodeString(v.ControlPay)
	if len(p) < 2 || v.OverlayIndex == nil || v.ControlTag == nil || int(p[0]) != *v.OverlayIndex ||
		int(p[1]) != *v.ControlTag || !bytes.Equal(p[2:], want) {
		t.Errorf("%v: control %x, recorded index %v tag %v payload %q", v, p, v.OverlayIndex, v.ControlTag, v.ControlPay)
	}
}

func checkEnvelope(t *testing.T, v vector, tag byte, payload []byte) GossipEnvelope {
	t.Helper()
	env, err := DecodeGossipEnvelope(tag, payload)
	if err != nil {
		t.Fatalf("%v: %v", v, err)
	}
	if env.Channel != v.Channel || env.Src != mustName(t, v.SrcPeer) || len(env.Msg) != v.PayloadLen {
		t.Errorf("%v: envelope %q %v len %d, want %q %s %d", v, env.Channel, env.Src, len(env.Msg),
			v.Channel, v.SrcPeer, v.PayloadLen)
	}
	if v.DstPeer != "" && env.Dst != mustName(t, v.DstPeer) {
		t.Errorf("%v: dst %v want %s", v, env.Dst, v.DstPeer)
	}
	again, err := EncodeGossipEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	equalBytes(t, v.String()+" envelope re-encode", again, payload)
	return env
}

// TestVectorTopologyReencode re-encodes every captured topology payload
// with encoding/gob and compares byte for byte. Gob type ids are
// process-global (assigned on first use of a type), so each group of
// vectors sharing an id base is encoded in a fresh child process whose
// next free id has been advanced to that base.
func TestVectorTopologyReencode(t *testing.T) {
	groups := map[int][]vector{}
	for _, v := range loadTCPVectors(t) {
		if v.Channel == "topology" {
			base := v.typeID(t, "peerSummary")
			if v.typeID(t, "connectionSummary") != base+1 || v.typeID(t, "[]type"+fmt.Sprint(base+1)) != base+2 {
				t.Fatalf("%v: unexpected type id layout %v", v, v.GobTypeDefs)
			}
			groups[base] = append(groups[base], v)
		}
	}
	if len(groups) < 2 {
		t.Fatalf("want vectors from at least two id bases, got %v", slices.Collect(maps.Keys(groups)))
	}
	for base, vs := range groups {
		req := gobHelperRequest{BaseID: base}
		for _, v := range vs {
			req.Payloads = append(req.Payloads, v.toTopology(t))
		}
		got := runGobHelperChild(t, req)
		for i, v := range vs {
			body := frameBody(t, v)
			env, err := DecodeGossipEnvelope(body[0], body[1:])
			if err != nil {
				t.Fatal(err)
			}
			equalBytes(t, v.String()+" topology re-encode", got[i], env.Msg)
		}
	}
}

type gobHelperRequest struct {
	BaseID   int
	Payloads [][]TopologyPeer
}

func runGobHelperChild(t *testing.T, req gobHelperRequest) [][]byte {
	t.Helper()
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), gobHelperEnv+"=1")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gob helper: %v: %s", err, stderr.String())
	}
	var res [][]byte
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(req.Payloads) {
		t.Fatalf("gob helper output %q: %v", out, err)
	}
	return res
}

// runGobHelper runs in the child: it advances gob's type id counter to
// BaseID, then encodes every payload with EncodeTopology.
func runGobHelper() error {
	var req gobHelperRequest
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		return fmt.Errorf("decode request: %w", err)
	}
	for i := 0; ; i++ {
		id, err := burnGobTypeID(i)
		if err != nil {
			return err
		}
		if id == req.BaseID-1 {
			break
		}
		if id >= req.BaseID-1 {
			return fmt.Errorf("gob type id %d already past base %d", id, req.BaseID)
		}
	}
	var res [][]byte
	for _, p := range req.Payloads {
		b, err := EncodeTopology(p)
		if err != nil {
			return err
		}
		res = append(res, b)
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// burnGobTypeID makes gob allocate one type id for a fresh struct type and
// returns that id.
func burnGobTypeID(i int) (int, error) {
	typ := reflect.StructOf([]reflect.StructField{{Name: fmt.Sprintf("Burn%d", i), Type: reflect.TypeFor[int]()}})
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).EncodeValue(reflect.New(typ).Elem()); err != nil {
		return 0, fmt.Errorf("burn gob type id: %w", err)
	}
	r := gobwire.Reader{B: buf.Bytes()}
	m := r.Message()
	id := m.Int()
	if r.Err != nil || m.Err != nil || id >= 0 {
		return 0, errors.New("burn gob type id: no type definition")
	}
	return int(-id), nil
}

func TestTopologyRoundTripInProcess(t *testing.T) {
	for _, v := range loadTCPVectors(t) {
		if v.Channel != "topology" {
			continue
		}
		want := v.toTopology(t)
		b, err := EncodeTopology(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeTopology(b)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: round trip %+v %v", v, got, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	if _, _, err := DecodeFrame([]byte{0x80, 0, 0, 0, 1}); !errors.Is(err, ErrTooBig) {
		t.Errorf("2^31 length prefix: %v", err)
	}
	if _, _, err := DecodeFrame([]byte{0, 0, 0, 5, 1}); !errors.Is(err, ErrShort) {
		t.Errorf("truncated body: %v", err)
	}
	if _, _, err := DecodeProtocolHeader([]byte("wEave\x01\x02")); !errors.Is(err, ErrBadHeader) {
		t.Errorf("bad magic: %v", err)
	}
	if _, err := DecodeGossipEnvelope(TagHeartbeat, nil); !errors.Is(err, ErrBadTag) {
		t.Errorf("tag 0 envelope: %v", err)
	}
	bad := TopologyPeer{Name: 1}
	b, _ := EncodeTopology([]TopologyPeer{bad})
	b[4] ^= 0xff // corrupt
	if _, err := DecodeTopology(b); err == nil {
		t.Errorf("corrupt topology decoded without error")
	}
}
