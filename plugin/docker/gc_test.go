package docker

import (
	"context"
	"net/netip"
	"reflect"
	"sort"
	"testing"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/seedf75a49c6/weave/ipam/address"
)

// fakeEngine answers NetworkList/NetworkInspect from fixed networks.
type fakeEngine struct {
	EngineClient // other calls are not used
	nets         []network.Inspect
}

func (f *fakeEngine) NetworkList(context.Context, client.NetworkListOptions) (client.NetworkListResult, error) {
	var r client.NetworkListResult
	for _, n := range f.nets {
		r.Items = append(r.Items, network.Summary{Network: n.Network})
	}
	return r, nil
}

func (f *fakeEngine) NetworkInspect(_ context.Context, id string, _ client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	for _, n := range f.nets {
		if n.ID == id {
			return client.NetworkInspectResult{Network: n}, nil
		}
	}
	return client.NetworkInspectResult{}, nil
}

// TestReleaseStaleAfterDowntime: only an address filed under itself, in a
// weavemesh pool, unused by any endpoint and not handed out by this
// instance is released.
func TestReleaseStaleAfterDowntime(t *testing.T) {
	h := newHarness(t)
	for _, s := range []string{"10.32.0.5", "10.32.0.6", "10.99.0.1"} {
		a, _ := address.ParseIP(s)
		if err := h.alloc.Claim(context.Background(), s, address.CIDR{Addr: a, PrefixLen: 12}, false); err != nil {
			t.Fatal(err)
		}
	}
	h.alloc.Claim(context.Background(), "c1", address.MustParseCIDR("10.32.0.8/12"), false)
	handed := h.requestAddress(pool12, "", nil) // this instance's: kept
	var n network.Inspect
	n.ID, n.Name, n.IPAM.Driver = "net1", "weave", MeshDriverName
	n.IPAM.Config = []network.IPAMConfig{{Subnet: netip.MustParsePrefix("10.32.0.0/12")}}
	n.Containers = map[string]network.EndpointResource{"x": {IPv4Address: netip.MustParsePrefix("10.32.0.5/12")}}
	var other network.Inspect
	other.ID, other.IPAM.Driver = "net2", "default"
	other.IPAM.Config = []network.IPAMConfig{{Subnet: netip.MustParsePrefix("10.99.0.0/16")}}
	got, err := h.p.ReleaseStale(context.Background(), &fakeEngine{nets: []network.Inspect{n, other}})
	if err != nil || got != 1 {
		t.Fatalf("ReleaseStale = %d, %v; want 1", got, err)
	}
	var left []string
	for ident := range h.alloc.idents() {
		left = append(left, ident)
	}
	sort.Strings(left)
	want := []string{"10.32.0.5", netip.MustParsePrefix(handed).Addr().String(), "10.99.0.1", "c1"}
	sort.Strings(want)
	if !reflect.DeepEqual(left, want) {
		t.Fatalf("left allocated %v, want %v (10.32.0.6 released)", left, want)
	}
}
