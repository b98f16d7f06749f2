package daemon

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/ipam"
	ourmesh "github.com/seedf75a49c6/weave/mesh"
)

const node1Peer = "aa:00:00:00:28:01" // testdata/weave-2.8.1/node1-weave-netdata.db

// adoptConfig is a config whose data dir holds 2.8.1's node1 file where
// the DaemonSet keeps it (<data-dir>/weave-netdata.db) and whose host
// root has a machine id.
func adoptConfig(t *testing.T, withLegacy bool) Config {
	t.Helper()
	cfg := DefaultConfig(nil)
	cfg.DataDir = t.TempDir()
	cfg.HostRoot = t.TempDir()
	cfg.Bridge = "wtest-absent"
	if err := os.MkdirAll(filepath.Join(cfg.HostRoot, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.HostRoot, "etc", "machine-id"), []byte("0123456789abcdef0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if withLegacy {
		data, err := os.ReadFile(filepath.Join("testdata", "weave-2.8.1", "node1-weave-netdata.db"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cfg.DataDir, "weave-netdata.db"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

func TestResolvePeerNameAdoptsWeave281File(t *testing.T) {
	cfg := adoptConfig(t, true)
	name, err := ResolvePeerName(cfg)
	if err != nil || name.String() != node1Peer {
		t.Fatalf("peer name %v, %v; want 2.8.1's %s", name, err, node1Peer)
	}
	var logs bytes.Buffer
	s, err := chooseIPAMStore(cfg, name, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || s.adopted == nil || s.path != filepath.Join(cfg.DataDir, "weave-netdata.db") {
		t.Fatalf("store %+v, %v; want 2.8.1's file adopted", s, err)
	}
	for _, want := range []string{"adopting Weave Net 2.8.1's data file", "ring-entries=2", "containers=3",
		"10.32.0.0-10.40.0.0", "10.32.0.1/12 10.32.0.2/12 10.32.0.3/12"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log line lacks %q: %s", want, logs.String())
		}
	}
	// --print-peer-name persisted it: the next launch keeps it.
	again, err := ResolvePeerName(cfg)
	if err != nil || again != name {
		t.Fatalf("relaunch: %v, %v", again, err)
	}
}

func TestResolvePeerNameWithoutFilesIs281Derivation(t *testing.T) {
	cfg := adoptConfig(t, false)
	name, err := ResolvePeerName(cfg)
	want, _, _ := ourmesh.SystemPeerName(cfg.HostRoot)
	if err != nil || name != want || name.String() != "0a:39:ab:6e:42:c6" {
		t.Fatalf("peer name %v, %v; want the machine-id derivation %v", name, err, want)
	}
	// The data dir lost everything: the same name again.
	if err := os.RemoveAll(cfg.DataDir); err != nil {
		t.Fatal(err)
	}
	if again, err := ResolvePeerName(cfg); err != nil || again != name {
		t.Fatalf("after losing the data dir: %v, %v; want %v", again, err, name)
	}
	s, err := chooseIPAMStore(cfg, name, slog.New(slog.DiscardHandler))
	if err != nil || s.adopted != nil || s.path != filepath.Join(cfg.DataDir, IPAMDBFile) {
		t.Fatalf("store %+v, %v; want ours", s, err)
	}
}

func TestWeave281FileNotAdoptedOverOurs(t *testing.T) {
	cfg := adoptConfig(t, true)
	cfg.Name = "aa:00:00:00:00:99"
	if err := os.WriteFile(filepath.Join(cfg.DataDir, IPAMDBFile), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	name, err := ResolvePeerName(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := chooseIPAMStore(cfg, name, slog.New(slog.DiscardHandler)); err != nil || s.adopted != nil {
		t.Fatalf("ours present: %+v, %v", s, err)
	}
	// Without ours, a 2.8.1 file of another peer is left alone too.
	if err := os.Remove(filepath.Join(cfg.DataDir, IPAMDBFile)); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s, err := chooseIPAMStore(cfg, name, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || s.adopted != nil || !strings.Contains(logs.String(), "belongs to another peer name") {
		t.Fatalf("other peer's file: %+v, %v, %s", s, err, logs.String())
	}
}

func TestCorruptWeave281FileRefused(t *testing.T) {
	cfg := adoptConfig(t, true)
	path := filepath.Join(cfg.DataDir, "weave-netdata.db")
	if err := os.Truncate(path, 8192); err != nil {
		t.Fatal(err)
	}
	_, err := ResolvePeerName(cfg)
	if !errors.Is(err, ipam.ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("want an error naming %s, got %v", path, err)
	}
	if _, statErr := os.Stat(filepath.Join(cfg.DataDir, ourmesh.PeerNameFile)); !os.IsNotExist(statErr) {
		t.Errorf("a peer name was persisted despite the refused file: %v", statErr)
	}
}

func TestDBPrefixLocatesWeave281File(t *testing.T) {
	cfg := adoptConfig(t, false)
	other := t.TempDir()
	data, _ := os.ReadFile(filepath.Join("testdata", "weave-2.8.1", "node1-weave-netdata.db"))
	if err := os.WriteFile(filepath.Join(other, "weavedata.db"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.DBPrefix = filepath.Join(other, "weave") // 2.8.1's `weave launch` default, /weavedb/weave
	if got := cfg.Weave281DBPath(); got != filepath.Join(other, "weavedata.db") {
		t.Fatalf("path %s", got)
	}
	if name, err := ResolvePeerName(cfg); err != nil || name.String() != node1Peer {
		t.Fatalf("peer name %v, %v", name, err)
	}
}

func TestWeave281FileWithAnotherRangeRefused(t *testing.T) {
	cfg := adoptConfig(t, true)
	cfg.IPAllocRange = "10.48.0.0/12"
	name, err := ResolvePeerName(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = chooseIPAMStore(cfg, name, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "10.32.0.0-10.48.0.0") || !strings.Contains(err.Error(), "weave-netdata.db") {
		t.Fatalf("want an error naming the file and both ranges, got %v", err)
	}
}

func TestWeave281FileWithIPAMOffGivesOnlyTheName(t *testing.T) {
	cfg := adoptConfig(t, true)
	cfg.IPAllocRange = ""
	name, err := ResolvePeerName(cfg)
	if err != nil || name.String() != node1Peer {
		t.Fatalf("%v, %v", name, err)
	}
	var logs bytes.Buffer
	s, err := chooseIPAMStore(cfg, name, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || s.adopted != nil || !strings.Contains(logs.String(), "IPAM is off") {
		t.Fatalf("%+v, %v, %s", s, err, logs.String())
	}
}
