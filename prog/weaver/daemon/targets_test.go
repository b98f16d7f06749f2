package daemon

import (
	"path/filepath"
	"slices"
	"strings"
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

func TestCheckTarget(t *testing.T) {
	for _, ok := range []string{"10.0.0.1", "10.0.0.1:6783", "h3", "h3:1", "[fd00::1]:6783", "host.example:65535",
		"[fd00::2]", "fd00::2", "[fe80::1%eth0]:6783"} {
		if err := CheckTarget(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"1.2.3.4:0":     `invalid value "1.2.3.4:0": port "0" is not 1-65535`,
		"1.2.3.4:65536": "is not 1-65535",
		"1.2.3.4:x":     "is not 1-65535",
		":6783":         "want host[:port]",
		"":              "want host[:port]",
		"-x":            "want host[:port]",
		"a b":           "want host[:port]",
		"[fd00::2":      "want [IPv6 address]",
		"[fd00::2]:0":   "is not 1-65535",
		"[fd00::zz]":    `"fd00::zz" is not an IPv6 address`,
		"[1.2.3.4]":     `"1.2.3.4" is not an IPv6 address`,
		"[]":            `"" is not an IPv6 address`,
	} {
		if err := CheckTarget(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", bad, err, want)
		}
	}
	ok, errs := validTargets([]string{"10.0.0.1", "1.2.3.4:0"})
	if !slices.Equal(ok, []string{"10.0.0.1"}) || len(errs) != 1 {
		t.Errorf("validTargets = %v %v", ok, errs)
	}
}
