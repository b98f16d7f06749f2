package daemon

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestTargetsRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if got, err := LoadTargets(dir); err != nil || got != nil {
		t.Fatalf("missing file: %v %v", got, err)
	}
	want := []string{"192.168.100.2", "h3:6783"}
	if err := SaveTargets(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadTargets(dir)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("LoadTargets = %v, %v; want %v", got, err, want)
	}
	if err := SaveTargets(dir, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := LoadTargets(dir); len(got) != 0 {
		t.Fatalf("after forgetting all: %v", got)
	}
}
