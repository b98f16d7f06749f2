package daemon

import "testing"

// TestLivenessBind: an IPv6 advertised address (an IPv6-only underlay)
// makes liveness listen on "::"; --host, an IPv4 address or none keep
// the IPv4 default.
func TestLivenessBind(t *testing.T) {
	for _, c := range []struct{ host, adv, want string }{
		{"", "fd00:100::1", "::"},
		{"", "192.168.100.1", ""},
		{"", "::ffff:192.168.100.1", ""},
		{"", "", ""},
		{"10.0.0.1", "fd00:100::1", "10.0.0.1"},
		{"fd00::5", "fd00::5", "fd00::5"},
	} {
		if got := livenessBind(c.host, c.adv); got != c.want {
			t.Errorf("livenessBind(%q, %q) = %q, want %q", c.host, c.adv, got, c.want)
		}
	}
}
