package netdev

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestHostOverlapNamesTheRouteOrAddress: a namespace host whose underlay
// is 10.60.1.2/24 on a veth (a connected route) and a static route to
// 10.70.0.0/16, and a bridge "weave" holding an address of the range.
func TestHostOverlapNamesTheRouteOrAddress(t *testing.T) {
	ns, path := netnstest.NewNS(t)
	for _, cmd := range [][]string{
		{"ip", "link", "add", "under0", "type", "veth", "peer", "name", "under1"},
		{"ip", "addr", "add", "10.60.1.2/24", "dev", "under0"},
		{"ip", "link", "set", "under0", "up"}, {"ip", "link", "set", "under1", "up"},
		{"ip", "route", "add", "10.70.0.0/16", "via", "10.60.1.1"},
		{"ip", "link", "add", "weave", "type", "bridge"},
		{"ip", "addr", "add", "10.32.0.1/12", "dev", "weave"}, {"ip", "link", "set", "weave", "up"},
		{"ip", "route", "add", "default", "via", "10.60.1.1"},
		{"ip", "link", "set", "lo", "up"}, {"ip", "addr", "add", "10.80.0.1/32", "dev", "lo"},
	} {
		if err := netnstest.Exec(ns, cmd...); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	cases := map[string]string{
		"10.60.0.0/16":   "route 10.60.1.0/24 on under0",
		"10.60.1.128/25": "route 10.60.1.0/24 on under0",
		"10.70.3.0/24":   "route 10.70.0.0/16 on under0",
		"10.80.0.0/16":   "address 10.80.0.1/32 on lo",
		"10.32.0.0/12":   "", // only on the bridge itself
		"192.168.0.0/16": "", // only the default route covers it
	}
	for cidr, want := range cases {
		var got string
		err := netns.Do(path, func() (err error) {
			got, err = HostOverlap(netip.MustParsePrefix(cidr), "weave")
			return err
		})
		if err != nil || (want == "" && got != "") || !strings.HasPrefix(got, want) {
			t.Errorf("%s: got %q, %v; want %q", cidr, got, err, want)
		}
	}
}
