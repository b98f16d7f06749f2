package mesh

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	wmesh "github.com/weaveworks/mesh"
)

func TestPeerNameFlagWinsAndIsPersisted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data") // created on demand
	cases := map[string]string{
		"aa:bb:cc:dd:ee:ff": "aa:bb:cc:dd:ee:ff",
		"::1":               "00:00:00:00:00:01",
		"12::34":            "12:00:00:00:00:34",
	}
	for flag, want := range cases {
		got, err := LoadOrCreatePeerName(dir, flag)
		if err != nil || got.String() != want {
			t.Fatalf("flag %q: got %v, %v; want %s", flag, got, err, want)
		}
		again, err := LoadOrCreatePeerName(dir, "")
		if err != nil || again != got {
			t.Fatalf("flag %q not persisted: reload %v, %v", flag, again, err)
		}
	}
}

func TestPeerNameBadFlagNamesValue(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadOrCreatePeerName(dir, "not-a-mac")
	if err == nil || !strings.Contains(err.Error(), `"not-a-mac"`) {
		t.Fatalf("want error naming the bad value, got %v", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, PeerNameFile)); !os.IsNotExist(statErr) {
		t.Errorf("bad flag must not write %s: %v", PeerNameFile, statErr)
	}
}

func TestPeerNameRandomIsLocalUnicastAndStable(t *testing.T) {
	dir := t.TempDir()
	first, err := LoadOrCreatePeerName(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadOrCreatePeerName(dir, "")
	if err != nil || again != first {
		t.Fatalf("second load %v %v, want %v", again, err, first)
	}
	data, err := os.ReadFile(filepath.Join(dir, PeerNameFile))
	if err != nil || strings.TrimSpace(string(data)) != first.String() {
		t.Fatalf("file content %q (%v), want %s", data, err, first)
	}
	other, err := LoadOrCreatePeerName(t.TempDir(), "")
	if err != nil || other == first {
		t.Errorf("two fresh dirs gave %v and %v (%v)", first, other, err)
	}
	for range 200 {
		n, err := RandomPeerName()
		if err != nil {
			t.Fatal(err)
		}
		checkLocalUnicast(t, n)
	}
	checkLocalUnicast(t, first)
}

func checkLocalUnicast(t *testing.T, n wmesh.PeerName) {
	t.Helper()
	b0 := byte(uint64(n) >> 40)
	if b0&0x01 != 0 || b0&0x02 == 0 || uint64(n)>>48 != 0 {
		t.Fatalf("%v is not a locally-administered unicast 48-bit name", n)
	}
}

func TestPeerNameCorruptFileIsNamed(t *testing.T) {
	for _, content := range []string{"garbage\n", "", "aa:bb:cc:dd:ee:ff:00"} {
		dir := t.TempDir()
		path := filepath.Join(dir, PeerNameFile)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadOrCreatePeerName(dir, "")
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("content %q: want error naming %s, got %v", content, path, err)
		}
		// The corrupt file is left for the operator to inspect.
		if data, _ := os.ReadFile(path); string(data) != content {
			t.Errorf("corrupt file was rewritten to %q", data)
		}
	}
}

func TestPeerNameNoTempFilesLeft(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"02:00:00:00:00:01", "02:00:00:00:00:02", ""} {
		if _, err := LoadOrCreatePeerName(dir, f); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != PeerNameFile {
		t.Fatalf("data dir holds %v (%v), want only %s", entries, err, PeerNameFile)
	}
}

func TestPeerNameUnwritableDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadOrCreatePeerName(filepath.Join(file, "sub"), "")
	if err == nil || !strings.Contains(err.Error(), "create data dir") {
		t.Fatalf("data dir under a file: %v", err)
	}
}
