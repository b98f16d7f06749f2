package hostsfile

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte("172.17.0.2\tc1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	addrs := []netip.Prefix{netip.MustParsePrefix("10.32.0.1/12"), netip.MustParsePrefix("10.2.1.1/24")}
	if err := Write(path, "web.weave.local.", addrs, []Host{{"db", netip.MustParseAddr("10.9.9.9")}}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) {
		t.Fatal("the hosts file was replaced, not rewritten: a container's bind mount would keep the old one")
	}
	data, _ := os.ReadFile(path)
	want := "10.32.0.1\tweb.weave.local web\n10.2.1.1\tweb.weave.local web\n10.9.9.9\tdb\n127.0.0.1\tlocalhost\n"
	if !strings.Contains(string(data), want) || strings.Contains(string(data), "172.17.0.2") {
		t.Fatalf("hosts file:\n%s\nwant it to contain\n%s", data, want)
	}
	if err := Write("relative", "x", nil, nil); err == nil {
		t.Fatal("relative path accepted")
	}
}

func TestParseHost(t *testing.T) {
	if h, err := ParseHost("db:fd00::1"); err != nil || h.Name != "db" || h.Addr.String() != "fd00::1" {
		t.Fatalf("db:fd00::1: %+v %v", h, err)
	}
	for _, bad := range []string{"db", ":1.2.3.4", "db:nope"} {
		if _, err := ParseHost(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v, want an error naming it", bad, err)
		}
	}
}
