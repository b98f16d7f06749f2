package ipam

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/address"
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
