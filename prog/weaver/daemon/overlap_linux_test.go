package daemon

import (
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestIPAllocRangeOverlapIsRefused: a range overlapping the host's
// underlay was accepted; a container then got its host's address.
func TestIPAllocRangeOverlapIsRefused(t *testing.T) {
	ns, path := netnstest.NewNS(t)
	for _, cmd := range [][]string{
		{"ip", "link", "add", "under0", "type", "veth", "peer", "name", "under1"},
		{"ip", "addr", "add", "10.60.1.2/24", "dev", "under0"}, {"ip", "link", "set", "under0", "up"},
	} {
		if err := netnstest.Exec(ns, cmd...); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	for rng, want := range map[string]string{
		"10.60.0.0/16": "--ipalloc-range: network 10.60.0.0/16 overlaps with existing route 10.60.1.0/24 on under0 on host",
		"10.32.0.0/12": "",
	} {
		d := &daemon{cfg: Config{IPAllocRange: rng, Bridge: "weave"}}
		err := netns.Do(path, d.checkRangeOverlap)
		if (want == "" && err != nil) || (want != "" && (err == nil || !strings.HasPrefix(err.Error(), want))) {
			t.Errorf("%s: %v, want %q", rng, err, want)
		}
	}
}
