package mesh

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	wmesh "github.com/weaveworks/mesh"
)

// vector is one record of testdata/*.messages.jsonl (captured from real
// Weave Net 2.8.1 routers, decoded from packet captures).
type vector struct {
	File         string
	Frame        int               `json:"frame"`
	Transport    string            `json:"transport"`
	Unit         string            `json:"unit"`
	Hex          string            `json:"hex"`
	MinVersion   int               `json:"min_version"`
	MaxVersion   int               `json:"max_version"`
	Flag         *int              `json:"flag"`
	LengthPrefix int               `json:"length_prefix"`
	Features     map[string]string `json:"features"`
	GobTypeDefs  [][2]any          `json:"gob_type_defs"`
	Tag          *int              `json:"tag"`
	Channel      string            `json:"channel"`
	SrcPeer      string            `json:"src_peer"`
	DstPeer      string            `json:"dst_peer"`
	PayloadLen   int               `json:"payload_len"`
	Topology     []vectorPeer      `json:"topology"`
	OverlayIndex *int              `json:"overlay_index"`
	ControlTag   *int              `json:"control_tag"`
	ControlPay   string            `json:"control_payload"`
	PublicKey    string            `json:"public_key"`
	SealedLen    int               `json:"sealed_len"`
	PlaintextLen int               `json:"plaintext_len"`
}

type vectorPeer struct {
	Name        string `json:"name"`
	Nick        string `json:"nick"`
	UID         uint64 `json:"uid"`
	Version     uint64 `json:"version"`
	ShortID     uint16 `json:"short_id"`
	HasShortID  bool   `json:"has_short_id"`
	Connections []struct {
		Name        string `json:"name"`
		TCPAddr     string `json:"tcp_addr"`
		Outbound    bool   `json:"outbound"`
		Established bool   `json:"established"`
	} `json:"connections"`
}

func (v vector) String() string {
	return filepath.Base(v.File) + " frame " + strconv.Itoa(v.Frame) + " " + v.Unit
}

// loadTCPVectors returns every TCP record of the captured vectors.
func loadTCPVectors(t testing.TB) []vector {
	t.Helper()
	files, err := filepath.Glob("testdata/*.messages.jsonl")
	if err != nil || len(files) < 3 {
		t.Fatalf("vector files missing: %v %v", files, err)
	}
	var out []vector
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			var v vector
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if v.Transport == "tcp" {
				v.File = f
				out = append(out, v)
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func (v vector) raw(t testing.TB) []byte {
	t.Helper()
	b, err := hex.DecodeString(v.Hex)
	if err != nil || len(b) == 0 {
		t.Fatalf("%v: bad hex: %v", v, err)
	}
	return b
}

// toTopology converts the JSON form to the decoder's form.
func (v vector) toTopology(t testing.TB) []TopologyPeer {
	t.Helper()
	var out []TopologyPeer
	for _, p := range v.Topology {
		tp := TopologyPeer{Name: mustName(t, p.Name), NickName: p.Nick, UID: p.UID, Version: p.Version,
			ShortID: p.ShortID, HasShortID: p.HasShortID}
		for _, c := range p.Connections {
			tp.Connections = append(tp.Connections, TopologyConnection{Name: mustName(t, c.Name),
				RemoteTCPAddr: c.TCPAddr, Outbound: c.Outbound, Established: c.Established})
		}
		out = append(out, tp)
	}
	return out
}

func mustName(t testing.TB, s string) wmesh.PeerName {
	t.Helper()
	n, err := wmesh.PeerNameFromString(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// typeID returns the gob type id the capture recorded for a type name.
func (v vector) typeID(t testing.TB, name string) int {
	t.Helper()
	for _, d := range v.GobTypeDefs {
		if d[1] == name {
			return int(d[0].(float64))
		}
	}
	t.Fatalf("%v: no gob type %q in %v", v, name, v.GobTypeDefs)
	return 0
}

func equalBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s: bytes differ\n got %x\nwant %x", what, got, want)
	}
}
