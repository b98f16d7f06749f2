//go:build linux

package kube

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestCheckRangeFree: in a namespace host with 10.40.1.0/24 on its eth0,
// an IPALLOC_RANGE covering it is refused naming the route; a disjoint
// one passes.
func TestCheckRangeFree(t *testing.T) {
	name, path := netnstest.NewNS(t)
	for _, args := range [][]string{{"link", "add", "e0", "type", "veth", "peer", "e1"}, {"addr", "add", "10.40.1.1/24", "dev", "e0"}, {"link", "set", "e0", "up"}} {
		if out, err := netnstest.Output(name, append([]string{"ip"}, args...)...); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	var clash, free error
	err := netns.Do(path, func() error {
		clash = CheckRangeFree(netip.MustParsePrefix("10.40.0.0/16"), "weave")
		free = CheckRangeFree(netip.MustParsePrefix("10.64.0.0/12"), "weave")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if clash == nil || !strings.Contains(clash.Error(), "route 10.40.1.0/24 on e0") {
		t.Errorf("overlapping range: err = %v, want one naming route 10.40.1.0/24 on e0", clash)
	}
	if free != nil {
		t.Errorf("disjoint range: %v", free)
	}
}
