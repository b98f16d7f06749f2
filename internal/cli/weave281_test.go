package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLaunchFindsWeave281DataVolume: with 2.8.1's weavedb container known
// to Docker, weaver is pointed at the data file in its volume; not when
// our own database exists, nor when the user gave --db-prefix, nor
// without that container.
func TestLaunchFindsWeave281DataVolume(t *testing.T) {
	h := newHarness(t)
	db := running("0123abcd", 0) // 2.8.1's weavedb is a created, never started container
	db.Mounts = append(db.Mounts, struct{ Source, Destination string }{"/var/lib/docker/volumes/abc/_data", "/weavedb"})
	h.fakeDocker(map[string]dockerContainer{"weavedb": db})
	cfg := h.cfg
	cfg.WeaverPath = "/x/weaver"
	argv := func(args ...string) []string {
		t.Helper()
		a, err := WeaverArgv(context.Background(), cfg, args)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	want := "--db-prefix=/var/lib/docker/volumes/abc/_data/weave"
	if a := argv(); !slices.Contains(a, want) {
		t.Errorf("argv %v lacks %s", a, want)
	}
	if a := argv("--db-prefix", "/mine/weave"); slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, "--db-prefix=") }) {
		t.Errorf("user's --db-prefix overridden: %v", a)
	}
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "weavedata.db"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if a := argv(); slices.Contains(a, want) {
		t.Errorf("our own database exists, yet %v", a)
	}
}

func TestLaunchWithoutWeave281DataVolume(t *testing.T) {
	h := newHarness(t)
	h.fakeDocker(map[string]dockerContainer{})
	cfg := h.cfg
	cfg.WeaverPath = "/x/weaver"
	a, err := WeaverArgv(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, "--db-prefix") }) {
		t.Errorf("no weavedb container, yet %v", a)
	}
}
