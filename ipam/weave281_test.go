package ipam

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
	bolt "go.etcd.io/bbolt"
)

// fixture281 describes one of testdata/weave-2.8.1's data files, as its
// README and the router's `weave status ipam` say.
type fixture281 struct {
	node   string
	peer   string
	owned  map[string]string // container ID -> CIDR
	ranges string            // the peer's ranges in the ring
}

var fixtures281 = []fixture281{
	{"node1", "aa:00:00:00:28:01",
		map[string]string{"c1a": "10.32.0.1/12", "c1b": "10.32.0.2/12", "c1c": "10.32.0.3/12"},
		"[10.32.0.0-10.40.0.0]"},
	{"node2", "aa:00:00:00:28:02",
		map[string]string{"c2a": "10.40.0.0/12", "c2b": "10.40.0.1/12", "c2c": "10.40.0.100/12"},
		"[10.40.0.0-10.48.0.0]"},
}

// copyFixture281 copies a fixture's data file into a temp dir.
func copyFixture281(t *testing.T, node string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "weave-2.8.1", node, "weave-netdata.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "weave-netdata.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func rangesString(rs []address.Range) string {
	var b strings.Builder
	b.WriteString("[")
	for i, r := range rs {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(r.Start.String() + "-" + r.End.String())
	}
	return b.String() + "]"
}

func TestReadWeaveDataFileFixtures(t *testing.T) {
	for _, f := range fixtures281 {
		t.Run(f.node, func(t *testing.T) {
			path := copyFixture281(t, f.node)
			before := fileHash(t, path)
			p, err := ReadWeaveDataFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if p.PeerName.String() != f.peer {
				t.Errorf("peer name %s, want %s", p.PeerName, f.peer)
			}
			if p.Ring == nil || p.Ring.Range().String() != "10.32.0.0-10.48.0.0" {
				t.Fatalf("ring %v, want the range 10.32.0.0/12", p.Ring)
			}
			if got := rangesString(p.Ring.RangesOf(p.PeerName)); got != f.ranges {
				t.Errorf("ranges of %s: %s, want %s", f.peer, got, f.ranges)
			}
			if len(p.Ring.Entries) != 2 {
				t.Errorf("ring has %d entries, want 2: %v", len(p.Ring.Entries), p.Ring)
			}
			got := map[string]string{}
			for id, od := range p.Owned {
				if len(od.Cidrs) != 1 {
					t.Errorf("%s: %+v, want one address", id, od)
					continue
				}
				got[id] = od.Cidrs[0].String()
			}
			if !equalMaps(got, f.owned) {
				t.Errorf("owned %v, want %v", got, f.owned)
			}
			s := p.Summarize()
			if s.Entries != 2 || s.Containers != 3 || len(s.Addresses) != 3 || rangesString(s.Owned) != f.ranges {
				t.Errorf("summary %+v", s)
			}
			if fileHash(t, path) != before {
				t.Error("reading changed the file")
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// rewrite applies f to the bucket "top" of a copy of node1's file.
func rewrite(t *testing.T, f func(tx *bolt.Tx) error) string {
	t.Helper()
	path := copyFixture281(t, "node1")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(f); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func putKey(key string, val func(old []byte) []byte) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTop)
		return b.Put([]byte(key), val(slices.Clone(b.Get([]byte(key)))))
	}
}

// TestReadWeaveDataFileRefusesDamage: every damaged copy is refused with
// an error that names the file and wraps ErrCorrupt, and is left as it was.
func TestReadWeaveDataFileRefusesDamage(t *testing.T) {
	byteFile := func(mut func([]byte) []byte) func(t *testing.T) string {
		return func(t *testing.T) string {
			path := copyFixture281(t, "node1")
			data, _ := os.ReadFile(path)
			if err := os.WriteFile(path, mut(data), 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}
	}
	boltFile := func(f func(tx *bolt.Tx) error) func(t *testing.T) string {
		return func(t *testing.T) string { return rewrite(t, f) }
	}
	cases := []struct {
		name string
		make func(t *testing.T) string
		want string
	}{
		{"empty", byteFile(func([]byte) []byte { return nil }), "empty"},
		{"truncated to one page", byteFile(func(b []byte) []byte { return b[:4096] }), "truncated"},
		{"truncated mid-file", byteFile(func(b []byte) []byte { return b[:5*4096] }), "truncated"},
		{"both meta pages damaged", byteFile(func(b []byte) []byte {
			for _, off := range []int{16 + 20, 4096 + 16 + 20} {
				b[off] ^= 0xff
			}
			return b
		}), "checksum"},
		{"not a bbolt file", byteFile(func(b []byte) []byte { return bytes.Repeat([]byte("weave"), 2000) }), "magic"},
		{"unknown major version", boltFile(putKey("version", func([]byte) []byte { return []byte{2, 0} })), "unknown version [2 0]"},
		{"no version", boltFile(func(tx *bolt.Tx) error { return tx.Bucket(bucketTop).Delete(keyVersion) }), "unknown version []"},
		{"no bucket top", boltFile(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketTop) }), `no bucket "top"`},
		{"no peer name", boltFile(func(tx *bolt.Tx) error { return tx.Bucket(bucketTop).Delete(keyPeerName) }), "no peer name"},
		{"ring cut short", boltFile(putKey("ring", func(v []byte) []byte { return v[:len(v)/2] })), "key ring"},
		{"ring garbage", boltFile(putKey("ring", func(v []byte) []byte { return bytes.Repeat([]byte{0x7f}, len(v)) })), "key ring"},
		{"owned addresses cut short", boltFile(putKey("ownedAddresses", func(v []byte) []byte { return v[:len(v)-3] })), "key ownedAddresses"},
		{"owned addresses claim 2^60 entries", boltFile(putKey("ownedAddresses", func(v []byte) []byte {
			return append(v[:len(v)-1], 0xf8, 0x10, 0, 0, 0, 0, 0, 0, 0)
		})), "key ownedAddresses"},
		{"peer name of the wrong type", boltFile(putKey("peername", func([]byte) []byte {
			var b bytes.Buffer
			_ = gob.NewEncoder(&b).Encode("aa:00:00:00:28:01")
			return b.Bytes()
		})), "key peername"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := c.make(t)
			before := fileHash(t, path)
			p, err := ReadWeaveDataFile(path)
			if err == nil {
				t.Fatalf("accepted: %+v", p)
			}
			if p != nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, %v; want an ErrCorrupt naming %s and saying %q", p, err, path, c.want)
			}
			if fileHash(t, path) != before {
				t.Error("the refused file was changed")
			}
		})
	}
}

// Weave Net 2.8.1's persisted types, as its reference describes them
// (bucket "top", gob values): decoding our writes into these is what
// 2.8.1 does when it is started again on the file.
type (
	entry281 struct {
		Token   uint32
		Peer    uint64
		Version uint32
		Free    uint32
	}
	ring281 struct {
		Start, End uint32
		Peer       uint64
		Entries    []*entry281
		Seeds      []uint64
	}
	cidr281 struct {
		Addr      uint32
		PrefixLen int
	}
	owned281 struct {
		IsContainer bool
		Cidrs       []cidr281
	}
)

// read281 decodes a data file the way 2.8.1 loads it.
func read281(t *testing.T, path string) (uint64, ring281, map[string]owned281) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var name uint64
	var r ring281
	owned := map[string]owned281{}
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("top"))
		if v := b.Get([]byte("version")); !bytes.Equal(v, []byte{1, 0}) {
			t.Errorf("version %v, 2.8.1 needs [1 0]", v)
		}
		for key, dst := range map[string]any{"peername": &name, "ring": &r, "ownedAddresses": &owned} {
			if err := gob.NewDecoder(bytes.NewReader(b.Get([]byte(key)))).Decode(dst); err != nil {
				t.Errorf("2.8.1 cannot decode key %s: %v", key, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return name, r, owned
}

// TestWeaveDataFileRoundTrip281: 2.8.1's file -> our allocator, using it in
// place as its store, allocating and releasing -> the file read as 2.8.1
// reads it: same peer, same ring ownership, and every address we handed
// out recorded as owned, so a 2.8.1 started on it again cannot give it to
// another container. The old containers keep theirs throughout.
func TestWeaveDataFileRoundTrip281(t *testing.T) {
	path := copyFixture281(t, "node1")
	p, err := ReadWeaveDataFile(path)
	if err != nil {
		t.Fatal(err)
	}
	store := openStore(t, path)
	n := newMemNet(t, 281)
	a := n.addPeer(1, func(c *Config) { c.OurName = p.PeerName; c.Store = store })
	old := map[string]bool{"10.32.0.1": true, "10.32.0.2": true, "10.32.0.3": true}
	for id, cidr := range fixtures281[0].owned {
		got, err := a.Lookup(id, universe12)
		if err != nil || len(got) != 1 || got[0].String() != cidr {
			t.Fatalf("adopted %s: %v, %v; want %s", id, got, err, cidr)
		}
	}
	ours := map[string]string{}
	for _, id := range []string{"n1", "n2", "n3", "n4"} {
		r := n.allocate(a, id, universe12)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if old[r.c.Addr.String()] {
			t.Fatalf("%s got adopted address %s", id, r.c)
		}
		ours[id] = r.c.String()
	}
	if err := a.Delete("c1b"); err != nil {
		t.Fatal(err)
	}
	a.Stop()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	name, r, owned := read281(t, path)
	if mesh.PeerName(name) != p.PeerName || r.Peer != name {
		t.Errorf("peer %x / ring owner %x, want %s", name, r.Peer, p.PeerName)
	}
	if len(r.Entries) != 2 || r.Entries[0].Peer != name || address.Address(r.Entries[1].Token).String() != "10.40.0.0" {
		t.Errorf("ring entries changed hands: %+v", r.Entries)
	}
	want := map[string]string{"c1a": "10.32.0.1/12", "c1c": "10.32.0.3/12"}
	for id, c := range ours {
		want[id] = c
	}
	got := map[string]string{}
	for id, od := range owned {
		if od.IsContainer {
			t.Errorf("%s recorded as a Docker container: 2.8.1 would prune it at start", id)
		}
		for _, c := range od.Cidrs {
			got[id] = address.CIDR{Addr: address.Address(c.Addr), PrefixLen: c.PrefixLen}.String()
		}
	}
	if !equalMaps(got, want) {
		t.Fatalf("ownedAddresses as 2.8.1 reads them: %v, want %v", got, want)
	}
	// Free in our entry counts what is left (2.8.1 checks it against its space).
	if free, size := r.Entries[0].Free, uint32(1<<19); free != size-uint32(len(want)) {
		t.Errorf("free count of our entry %d, want %d", free, size-uint32(len(want)))
	}
	// And the file is still one we (and so 2.8.1's loader) accept whole.
	if _, err := ReadWeaveDataFile(path); err != nil {
		t.Fatal(err)
	}
}

// FuzzWeaveDataFile: any bytes where 2.8.1's data file should be are either
// refused with an error naming the file or read whole into a state whose
// ring holds its invariants; never a panic or a hang.
func FuzzWeaveDataFile(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "weave-2.8.1", "node1", "weave-netdata.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed, 0, byte(0))
	f.Add(seed, 3*4096+100, byte(0x55))
	f.Add(seed, 4*4096+20, byte(0xff))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, base []byte, off int, x byte) {
		data := slices.Clone(seed)
		if len(base) > 0 && len(base) < len(data) && off >= 0 {
			// Overwrite a stretch of the real file (a damaged page), keeping
			// its size: corruption that truncation checks cannot see.
			at := off % len(data)
			copy(data[at:], base)
			data[at] ^= x
		}
		path := filepath.Join(dir, "weave-netdata.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := ReadWeaveDataFile(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if p.Ring != nil {
			if err := p.Ring.CheckInvariants(); err != nil {
				t.Fatalf("accepted a ring that breaks its invariants: %v", err)
			}
		}
	})
}
