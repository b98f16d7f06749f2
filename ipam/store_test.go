package ipam

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
	bolt "go.etcd.io/bbolt"
)

func openStore(t *testing.T, path string) *BoltStore {
	t.Helper()
	s, err := OpenBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRestartKeepsAddresses: a restarted peer (same name, new UID) keeps its
// ring, space and every allocation.
func TestRestartKeepsAddresses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weavedata.db")
	n := newMemNet(t, 21)
	s := openStore(t, path)
	a := n.addPeer(1, func(c *Config) { c.Init = Init{Mode: InitConsensus, Quorum: 1}; c.Store = s })
	want := map[string]address.CIDR{}
	for _, id := range []string{"c1", "c2", "c3"} {
		r := n.allocate(a, id, universe12)
		if r.err != nil {
			t.Fatal(r.err)
		}
		want[id] = r.c
	}
	a.Stop()
	s.Close()

	s2 := openStore(t, path)
	defer s2.Close()
	n2 := newMemNet(t, 22)
	b := n2.addPeer(1, func(c *Config) { c.OurUID = 999; c.Store = s2 })
	for id, c := range want {
		if r := n2.allocate(b, id, universe12); r.err != nil || r.c != c {
			t.Fatalf("%s after restart: %v %v, want %v", id, r.c, r.err, c)
		}
	}
	if r := n2.allocate(b, "c4", universe12); r.err != nil || r.c.String() != "10.32.0.4/12" {
		t.Fatalf("new allocation after restart: %v %v (must not reuse a kept address)", r.c, r.err)
	}
}

func TestChangedRangeDiscardsRing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weavedata.db")
	s := openStore(t, path)
	n := newMemNet(t, 23)
	a := n.addPeer(1, func(c *Config) { c.Init = Init{Mode: InitConsensus, Quorum: 1}; c.Store = s })
	n.allocate(a, "c1", universe12)
	a.Stop()
	s.Close()

	s2 := openStore(t, path)
	defer s2.Close()
	var logs bytes.Buffer
	other := address.MustParseCIDR("10.64.0.0/16")
	b, err := New(Config{OurName: 0x0a0000000001, Universe: other, Store: s2,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	b.Start()
	defer b.Stop()
	if !strings.Contains(logs.String(), "discarding persisted IPAM ring") {
		t.Fatalf("no log line about the discarded ring: %s", logs.String())
	}
	if st := b.Status(); len(st.Entries) != 0 || st.ActiveIPs != 0 {
		t.Fatalf("old ring kept: %+v", st)
	}
}

func TestCorruptDatabaseStops(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("weave"), 3000), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBoltStore(garbage); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage file: %v", err)
	}
	if b, _ := os.ReadFile(garbage); !bytes.HasPrefix(b, []byte("weaveweave")) {
		t.Fatal("corrupt file was modified")
	}
	// A valid bolt file with an undecodable ring value.
	path := filepath.Join(dir, "bad-ring.db")
	s := openStore(t, path)
	if err := s.Save(&Persisted{PeerName: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketTop).Put(keyRing, []byte{7, 7, 7}) }); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{OurName: 1, Store: s})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "key ring") {
		t.Fatalf("New with corrupt ring: %v", err)
	}
	s.Close()
}

// TestTruncatedDatabaseIsRefused: a database cut to half its size made
// bbolt fault with SIGBUS when it touched a page past the end. The store
// checks the file against its own page count first and names the file.
func TestTruncatedDatabaseIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weavedata.db")
	s := openStore(t, path)
	owned := map[string]OwnedData{}
	for i := range 2000 { // enough data for several pages
		owned[fmt.Sprintf("container-%04d-%s", i, strings.Repeat("x", 40))] = OwnedData{IsContainer: true}
	}
	if err := s.Save(&Persisted{PeerName: 1, Owned: owned}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	_, err = OpenBoltStore(path)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("half-size database: %v", err)
	}
	if after, _ := os.Stat(path); after.Size() != st.Size()/2 {
		t.Errorf("refused file was modified: %d bytes, was %d", after.Size(), st.Size()/2)
	}
}

func TestEmptyOrMissingDatabaseOpensFresh(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{empty, filepath.Join(dir, "missing.db")} {
		s, err := OpenBoltStore(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got, err := s.Load(); err != nil || got != nil {
			t.Errorf("%s: Load = %v, %v; want no state", p, got, err)
		}
		s.Close()
	}
}

// A state with no takeovers pending is saved with 2.8.1's keys only (the
// file stays one 2.8.1 reads as its own); a pending one adds our key, and
// its end removes it again.
func TestSaveWritesOurKeyOnlyWithTakeoversPending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weave-netdata.db")
	s := openStore(t, path)
	keys := func() []string {
		var ks []string
		err := s.db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketTop).ForEach(func(k, _ []byte) error { ks = append(ks, string(k)); return nil })
		})
		if err != nil {
			t.Fatal(err)
		}
		return ks
	}
	name, err := mesh.PeerNameFromString("aa:00:00:00:00:01")
	if err != nil {
		t.Fatal(err)
	}
	p := &Persisted{PeerName: name}
	if err := s.Save(p); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(keys(), " "), "ownedAddresses peername version"; got != want {
		t.Errorf("keys without a ring or takeovers: %q, want %q", got, want)
	}
	p.Tentative = []TentativeData{{Token: 1}}
	if err := s.Save(p); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(keys(), " "), "ownedAddresses peername version "+string(keyTentative); got != want {
		t.Errorf("keys with a takeover pending: %q, want %q", got, want)
	}
	p.Tentative = nil
	if err := s.Save(p); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(keys(), " "), "ownedAddresses peername version"; got != want {
		t.Errorf("keys after the takeover ended: %q, want %q", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
