package cni_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

func requireStdPlugin(t *testing.T, name string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("/usr/lib/cni", name)); err != nil {
		netnstest.RequireTools(t, name) // skips loudly (fails under CI): install containernetworking-plugins
	}
}

// TestIPAMPluginWithBridge: weave-ipam hands the standard bridge plugin
// an address from the router's IPAM, and gives it back on DEL (Debian's
// plugins speak up to 1.0.0).
func TestIPAMPluginWithBridge(t *testing.T) {
	requireStdPlugin(t, "bridge")
	x := newHost(t)
	s := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"brnet","plugins":[{"type":"bridge","bridge":"cnibr0","isGateway":true,
		"ipam":{"type":"weave-ipam","subnet":"10.40.9.0/24","gateway":"10.40.9.1","routes":[{"dst":"0.0.0.0/0"}],"dataDir":%q}}]}`, x.dataDir)
	l, err := libcni.ConfListFromBytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	c, rt := x.container()
	res := x.add(l, rt)
	addr := res.IPs[0].Address.String()
	if !strings.HasPrefix(addr, "10.40.9.") || res.IPs[0].Gateway.String() != "10.40.9.1" {
		t.Fatalf("bridge+weave-ipam gave %s via %s, want 10.40.9.x via 10.40.9.1", addr, res.IPs[0].Gateway)
	}
	if held := x.heldBy(rt.ContainerID); held != addr {
		t.Fatalf("IPAM holds %q, want %s", held, addr)
	}
	if out := inside(t, c, "ip", "route", "show", "default"); !strings.Contains(out, "via 10.40.9.1") {
		t.Fatalf("no default route via 10.40.9.1: %s", out)
	}
	if err := x.client().CheckNetworkList(context.Background(), l, rt); err != nil {
		t.Fatalf("CHECK: %v", err)
	}
	x.del(l, rt)
	x.del(l, rt)
	if held := x.heldBy(rt.ContainerID); held != "" || x.records() != 0 {
		t.Fatalf("after DEL: IPAM holds %q, %d records", held, x.records())
	}
	_, _ = netnstest.Output(x.h.NS, "ip", "link", "del", "cnibr0")
}

// TestDelegatedIPAM: an ipam.type other than ours runs that plugin
// (host-local here); the router's IPAM is not asked.
func TestDelegatedIPAM(t *testing.T) {
	requireStdPlugin(t, "host-local")
	x := newHost(t)
	hl := t.TempDir()
	l := x.conflist("1.0.0", fmt.Sprintf(`"ipam":{"type":"host-local","subnet":"10.50.0.0/24","dataDir":%q}`, hl))
	c, rt := x.container()
	res := x.add(l, rt)
	addr := res.IPs[0].Address
	if !strings.HasPrefix(addr.String(), "10.50.0.") {
		t.Fatalf("host-local address %s, want 10.50.0.x", addr.String())
	}
	if out := inside(t, c, "ip", "-4", "-o", "addr", "show", "dev", "eth0"); !strings.Contains(out, addr.String()) {
		t.Fatalf("eth0 lacks %s: %s", addr.String(), out)
	}
	if held := x.heldBy(rt.ContainerID); held != "" {
		t.Fatalf("the router's IPAM holds %q for a delegated attachment", held)
	}
	if err := x.client().CheckNetworkList(context.Background(), l, rt); err != nil {
		t.Fatalf("CHECK: %v", err)
	}
	lease := filepath.Join(hl, "weave", addr.IP.String())
	if _, err := os.Stat(lease); err != nil {
		t.Fatalf("host-local lease %s: %v", lease, err)
	}
	x.del(l, rt)
	if _, err := os.Stat(lease); !os.IsNotExist(err) {
		t.Fatalf("DEL left the host-local lease %s (%v)", lease, err)
	}
}
