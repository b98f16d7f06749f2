package dns_test

import (
	"bytes"
	"encoding/gob"
	"encoding/hex"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/dns"
	"github.com/seedf75a49c6/weave/internal/gobwire"
	"github.com/weaveworks/mesh"
)

var update = flag.Bool("update", false, "rewrite testdata/gossip-vector.hex")

// The types below are 2.8.1's nameserver gossip types as reference §6.7
// describes them (Addr a named uint32 like address.Address, Entries a
// named slice embedded in GossipData). Encoding them is what a 2.8.1 peer
// puts on the "nameserver" channel.
type (
	Address uint32
	Entry   struct {
		ContainerID string
		Origin      mesh.PeerName
		Addr        Address
		Hostname    string
		Version     int
		Tombstone   int64
	}
	Entries    []Entry
	GossipData struct {
		Timestamp int64
		Entries
	}
)

const (
	vecA mesh.PeerName = 0xaa0000000001
	vecB mesh.PeerName = 0xaa0000000002
	ts                 = 1_800_000_000
)

// vector281 is the vector in 2.8.1's wire order (case-sensitive hostname,
// then origin, container, address): "DB" sorts before "db".
var vector281 = GossipData{Timestamp: ts, Entries: Entries{
	{ContainerID: "c3", Origin: vecB, Addr: 0x0a280001, Hostname: "DB.weave.local.", Version: 0},
	{ContainerID: "c1", Origin: vecA, Addr: 0x0a200001, Hostname: "db.weave.local.", Version: 2},
	{ContainerID: "c2", Origin: vecA, Addr: 0x0a200002, Hostname: "db.weave.local.", Version: 5, Tombstone: ts - 60},
}}

func encode281(t *testing.T, g GossipData) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&g); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Gob type ids are process-global (2.8.1's captures show 65 in one run,
// 73 in another), so "byte for byte" is checked in fresh processes: the
// test binary re-runs itself to encode the vector as its first gob use,
// once with the 2.8.1 types and once with ours.
const childEnv = "DNS_VECTOR_CHILD"

func TestVectorChild(t *testing.T) {
	var b []byte
	switch os.Getenv(childEnv) {
	case "":
		return // only a helper process for TestEncodeMatches281
	case "281":
		b = encode281(t, vector281)
	case "ours":
		ours := &dns.GossipData{Timestamp: ts}
		for _, i := range []int{2, 0, 1} { // shuffled on purpose: Encode sorts
			e := vector281.Entries[i]
			ours.Entries = append(ours.Entries, dns.Entry{ContainerID: e.ContainerID, Origin: e.Origin,
				Addr: uint32(e.Addr), Hostname: e.Hostname, Version: e.Version, Tombstone: e.Tombstone})
		}
		b = ours.Encode()[0]
	}
	os.Stdout.WriteString("VECTOR " + hex.EncodeToString(b) + "\n")
}

func childEncode(t *testing.T, side string) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestVectorChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+side)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child %s: %v", side, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if h, ok := strings.CutPrefix(line, "VECTOR "); ok {
			b, err := hex.DecodeString(h)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("child %s printed no vector: %s", side, out)
	return nil
}

func golden(t *testing.T) []byte {
	t.Helper()
	const path = "testdata/gossip-vector.hex"
	if *update {
		b := childEncode(t, "281")
		if err := os.WriteFile(path, []byte(hex.EncodeToString(b)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// In a fresh process our encoder writes exactly the bytes the 2.8.1 types
// write (the golden), whatever order the entries are in.
func TestEncodeMatches281(t *testing.T) {
	want := golden(t)
	if got := childEncode(t, "281"); !bytes.Equal(got, want) {
		t.Fatalf("2.8.1-layout encoding differs from golden:\n got %x\nwant %x", got, want)
	}
	if got := childEncode(t, "ours"); !bytes.Equal(got, want) {
		t.Fatalf("our encoding differs from 2.8.1's:\n got %x\nwant %x", got, want)
	}
}

// What a 2.8.1 peer sends decodes field for field.
func TestDecode281(t *testing.T) {
	g, err := dns.DecodeGossip(golden(t))
	if err != nil {
		t.Fatal(err)
	}
	if g.Timestamp != ts || len(g.Entries) != 3 {
		t.Fatalf("decoded %+v", g)
	}
	byID := map[string]dns.Entry{}
	for _, e := range g.Entries {
		byID[e.ContainerID] = e
	}
	for _, w := range vector281.Entries {
		e := byID[w.ContainerID]
		if e.Origin != w.Origin || e.Addr != uint32(w.Addr) || e.Hostname != w.Hostname ||
			e.Version != w.Version || e.Tombstone != w.Tombstone {
			t.Errorf("entry %s = %+v, want %+v", w.ContainerID, e, w)
		}
	}
	if c2 := byID["c2"]; c2.IP().String() != "10.32.0.2" || c2.Live() {
		t.Errorf("c2 = %s live=%v", c2.IP(), c2.Live())
	}
}

// A hand walk of the golden bytes with the gob primitive reader: type
// definitions first, then the GossipData value with its fields in 2.8.1's
// order (zero fields omitted, as gob does).
func TestGoldenLayoutByHand(t *testing.T) {
	r := gobwire.Reader{B: golden(t)}
	var value gobwire.Reader
	names := map[string]bool{}
	for len(r.B) > 0 && r.Err == nil {
		m := r.Message()
		if id := m.Int(); id > 0 {
			value = m
			break
		}
		for _, n := range []string{"GossipData", "Entries", "Entry", "Timestamp", "ContainerID", "Origin", "Addr", "Hostname", "Version", "Tombstone"} {
			if bytes.Contains(m.B, []byte(n)) {
				names[n] = true
			}
		}
	}
	if r.Err != nil || len(names) != 10 {
		t.Fatalf("type definitions: names seen %v, err %v", names, r.Err)
	}
	if d := value.Uint(); d != 1 || value.Int() != ts {
		t.Fatal("field 1 is not Timestamp")
	}
	if d, n := value.Uint(), value.Uint(); d != 1 || n != 3 {
		t.Fatalf("field 2 is not Entries of 3 (delta %d count %d)", d, n)
	}
	// Entry 1: ContainerID, Origin, Addr, Hostname (Version 0, Tombstone 0 omitted).
	if value.Uint() != 1 || value.Str() != "c3" || value.Uint() != 1 || value.Uint() != uint64(vecB) ||
		value.Uint() != 1 || value.Uint() != 0x0a280001 || value.Uint() != 1 || value.Str() != "DB.weave.local." ||
		value.Uint() != 0 {
		t.Fatalf("entry 1 layout wrong (err %v)", value.Err)
	}
	// Entry 2: ..., Version 2 (field 5), Tombstone omitted.
	if value.Uint() != 1 || value.Str() != "c1" || value.Uint() != 1 || value.Uint() != uint64(vecA) ||
		value.Uint() != 1 || value.Uint() != 0x0a200001 || value.Uint() != 1 || value.Str() != "db.weave.local." ||
		value.Uint() != 1 || value.Int() != 2 || value.Uint() != 0 {
		t.Fatalf("entry 2 layout wrong (err %v)", value.Err)
	}
}

// Malformed gossip is an error, never a panic.
func TestDecodeRejects(t *testing.T) {
	good := golden(t)
	for name, b := range map[string][]byte{
		"empty": nil, "garbage": []byte("\x03\xff\x82\x01"), "truncated": good[:len(good)-3],
		"no hostname": encode281(t, GossipData{Timestamp: ts, Entries: Entries{{ContainerID: "x", Origin: vecA}}}),
	} {
		if _, err := dns.DecodeGossip(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
