package cni

import (
	"encoding/json"
	"testing"
)

// A record written before records named their ident keeps the bare
// container ID, under which those addresses were allocated (as 2.8.1
// allocated every one).
func TestRecordIdent(t *testing.T) {
	var old record
	if err := json.Unmarshal([]byte(`{"containerID":"abc","ifname":"net1","addrs":["10.32.0.5/12"]}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.ident() != "abc" {
		t.Errorf("old record's ident = %q, want the container ID", old.ident())
	}
	for _, c := range []struct{ ifName, want string }{{"eth0", "abc"}, {"net1", "abc:net1"}, {"", "abc"}} {
		if got := newRecord("abc", c.ifName, "").ident(); got != c.want {
			t.Errorf("ident of abc/%q = %q, want %q", c.ifName, got, c.want)
		}
	}
}
