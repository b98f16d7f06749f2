package daemon

import (
	"fmt"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/address"
)

func TestOwnedBlocks(t *testing.T) {
	u, _ := address.ParseCIDR("10.32.0.0/12")
	entries := []ipamEntry{
		{Token: "10.32.0.0", Size: 1 << 18, Peer: "aa:00:00:00:00:01"}, // 10.32.0.0/14
		{Token: "10.36.0.0", Size: 3 << 16, Peer: "aa:00:00:00:00:02"},
		{Token: "10.39.0.0", Size: 1 << 16, Peer: "aa:00:00:00:00:01"}, // 10.39.0.0/16
		{Token: "10.40.0.0", Size: 1 << 19, Peer: "aa:00:00:00:00:02"},
		// The last entry wraps: 10.47.255.0 + 512 = to the end, then 10.32.0.0/24 again.
		{Token: "10.47.255.0", Size: 512, Peer: "aa:00:00:00:00:03"},
		{Token: "bad", Size: 1, Peer: "aa:00:00:00:00:01"},
	}
	for _, tc := range []struct{ peer, want string }{
		{"aa:00:00:00:00:01", "[10.32.0.0/14 10.39.0.0/16]"},
		{"aa:00:00:00:00:02", "[10.36.0.0/15 10.38.0.0/16 10.40.0.0/13]"},
		{"aa:00:00:00:00:03", "[10.32.0.0/24 10.47.255.0/24]"},
		{"aa:00:00:00:00:04", "[]"},
	} {
		if got := fmt.Sprint(ownedBlocks(entries, tc.peer, u.Range())); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.peer, got, tc.want)
		}
	}
}
