package cni_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
)

// TestIPAMPluginVerbs drives the weave-ipam binary alone at 1.1.0: ADD
// returns an address with the configured gateway and routes, GC frees
// what the runtime no longer lists, STATUS follows the router.
func TestIPAMPluginVerbs(t *testing.T) {
	x := newHost(t)
	s := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"ipamonly","plugins":[{"type":"weave-ipam",
		"ipam":{"subnet":"10.40.12.0/24","gateway":"10.40.12.1","routes":[{"dst":"10.99.0.0/16"}],"dataDir":%q}}]}`, x.dataDir)
	l, err := libcni.ConfListFromBytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	_, keep := x.container()
	_, gone := x.container()
	res := x.add(l, keep)
	if !strings.HasPrefix(res.IPs[0].Address.String(), "10.40.12.") || res.IPs[0].Gateway.String() != "10.40.12.1" ||
		len(res.Routes) != 1 || res.Routes[0].GW.String() != "10.40.12.1" {
		t.Fatalf("weave-ipam result %s", res)
	}
	goneRes := x.add(l, gone)
	if goneRes.IPs[0].Address.String() == res.IPs[0].Address.String() {
		t.Fatalf("two containers got the same address %s", res.IPs[0].Address.String())
	}
	if err := x.client().CheckNetworkList(context.Background(), l, keep); err != nil {
		t.Fatalf("CHECK: %v", err)
	}
	if err := x.clientCache(t.TempDir()).GCNetworkList(context.Background(), l,
		&libcni.GCArgs{ValidAttachments: []types.GCAttachment{{ContainerID: keep.ContainerID, IfName: keep.IfName}}}); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if x.heldBy(gone.ContainerID) != "" || x.heldBy(keep.ContainerID) == "" {
		t.Fatalf("GC: gone holds %q (want none), keep holds %q", x.heldBy(gone.ContainerID), x.heldBy(keep.ContainerID))
	}
	if err := x.client().GetStatusNetworkList(context.Background(), l); err != nil {
		t.Fatalf("STATUS: %v", err)
	}
	err = x.client("WEAVE_HTTP_ADDR=127.0.0.1:1").GetStatusNetworkList(context.Background(), l)
	cniError(t, err, types.ErrPluginNotAvailable, "start it with `weave launch`")
	x.del(l, keep)
	if x.heldBy(keep.ContainerID) != "" || x.records() != 0 {
		t.Fatal("DEL left the address or the record")
	}
}

// TestConcurrentAdds: parallel ADDs on a host whose bridge has no address
// yet all succeed with distinct addresses and one shared gateway.
func TestConcurrentAdds(t *testing.T) {
	x := newHost(t)
	l := x.conflist("1.1.0", "")
	const n = 6
	rts := make([]*libcni.RuntimeConf, n)
	for i := range rts {
		_, rts[i] = x.container()
	}
	gws := map[string]bool{}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, rt := range rts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = x.client().AddNetworkList(context.Background(), l, rt)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, rt := range rts {
		if errs[i] != nil {
			t.Fatalf("ADD %d: %v", i, errs[i])
		}
		cached, err := x.client().GetNetworkListCachedResult(l, rt)
		if err != nil {
			t.Fatal(err)
		}
		res := x.convert(cached)
		a := res.IPs[0].Address.String()
		if seen[a] {
			t.Fatalf("address %s handed out twice", a)
		}
		seen[a] = true
		gws[res.IPs[0].Gateway.String()] = true
	}
	if len(gws) != 1 {
		t.Fatalf("containers got different gateways: %v", gws)
	}
	for _, rt := range rts {
		x.del(l, rt)
	}
	if n := x.vethCount(); n != 0 {
		t.Fatalf("%d veths left", n)
	}
}

// TestPodAttachedTwice: as Multus does, two ADDs with one container ID and
// two interface names give two addresses, each held under its own ident
// (eth0's under the bare container ID, as 2.8.1 kept every allocation);
// CHECK passes for both, and a DEL releases only its own interface's.
func TestPodAttachedTwice(t *testing.T) {
	x := newHost(t)
	ipamList := func(name string) *libcni.NetworkConfigList {
		s := fmt.Sprintf(`{"cniVersion":"1.1.0","name":%q,"plugins":[{"type":"weave-ipam","ipam":{"subnet":"10.40.13.0/24","dataDir":%q}}]}`, name, x.dataDir)
		l, err := libcni.ConfListFromBytes([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, tc := range []struct {
		what   string
		l      [2]*libcni.NetworkConfigList // the second without a default route, as Multus' secondary networks
		ifs    [2]string
		idents [2]string // "%s" is the container ID
	}{
		{"weave-net", [2]*libcni.NetworkConfigList{x.conflist("1.1.0", ""), x.conflist("1.1.0", `"ipam":{"routes":[{"dst":"10.99.0.0/16"}]}`)},
			[2]string{"eth0", "net1"}, [2]string{"%s", "%s:net1"}},
		{"weave-ipam", [2]*libcni.NetworkConfigList{ipamList("multus"), ipamList("multus")}, [2]string{"net1", "net2"}, [2]string{"%s:net1", "%s:net2"}},
	} {
		c, rt := x.container()
		rts := [2]*libcni.RuntimeConf{}
		addrs := [2]string{}
		for i, ifName := range tc.ifs {
			r := *rt
			r.IfName = ifName
			rts[i] = &r
			addrs[i] = x.add(tc.l[i], rts[i]).IPs[0].Address.String()
		}
		if addrs[0] == addrs[1] {
			t.Fatalf("%s: both attachments of %s got %s", tc.what, rt.ContainerID, addrs[0])
		}
		for i := range rts {
			if id := fmt.Sprintf(tc.idents[i], rt.ContainerID); x.heldBy(id) != addrs[i] {
				t.Fatalf("%s: IPAM holds %q for %s, want %s", tc.what, x.heldBy(id), id, addrs[i])
			}
			if err := x.client().CheckNetworkList(context.Background(), tc.l[i], rts[i]); err != nil {
				t.Fatalf("%s: CHECK %s: %v", tc.what, rts[i].IfName, err)
			}
		}
		if tc.what == "weave-net" {
			out := inside(t, c, "ip", "-o", "-4", "addr", "show")
			for i, ifName := range tc.ifs {
				if !strings.Contains(out, ifName+"    inet "+addrs[i]) {
					t.Fatalf("container lacks %s %s:\n%s", ifName, addrs[i], out)
				}
			}
		}
		x.del(tc.l[1], rts[1])
		first, second := fmt.Sprintf(tc.idents[0], rt.ContainerID), fmt.Sprintf(tc.idents[1], rt.ContainerID)
		if x.heldBy(second) != "" || x.heldBy(first) != addrs[0] {
			t.Fatalf("%s: DEL of %s: %s holds %q (want none), %s holds %q (want %s)", tc.what, tc.ifs[1],
				second, x.heldBy(second), first, x.heldBy(first), addrs[0])
		}
		if err := x.client().CheckNetworkList(context.Background(), tc.l[0], rts[0]); err != nil {
			t.Fatalf("%s: CHECK %s after the other's DEL: %v", tc.what, tc.ifs[0], err)
		}
		x.del(tc.l[0], rts[0])
		if x.heldBy(first) != "" {
			t.Fatalf("%s: DEL of %s left %q", tc.what, tc.ifs[0], x.heldBy(first))
		}
	}
	if n := x.records(); n != 0 {
		t.Fatalf("%d records left", n)
	}
}
