package cni_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/plugin/cni"
)

// TestVersionsAddCheckDel runs ADD, CHECK (0.4.0+), DEL and DEL again at
// every version the plugin reports, on one host.
func TestVersionsAddCheckDel(t *testing.T) {
	x := newHost(t)
	info, err := x.client().GetVersionInfo(context.Background(), "weave-net")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.1.0", "1.0.0", "0.4.0", "0.3.1", "0.3.0"} {
		if !contains(info.SupportedVersions(), v) {
			t.Fatalf("VERSION lists %v, missing %s", info.SupportedVersions(), v)
		}
	}
	for _, v := range info.SupportedVersions() {
		t.Run(v, func(t *testing.T) { x.t = t; addCheckDel(t, x, v) })
	}
}

func addCheckDel(t *testing.T, x *host, v string) {
	l := x.conflist(v, "")
	c, rt := x.container()
	res := x.add(l, rt)
	if len(res.IPs) != 1 {
		t.Fatalf("result has %d IPs: %v", len(res.IPs), res)
	}
	ip := res.IPs[0]
	if !netip.MustParsePrefix(ipRange).Contains(netip.MustParseAddr(ip.Address.IP.String())) {
		t.Fatalf("address %s outside the IPAM range %s", ip.Address.String(), ipRange)
	}
	if ok, _ := version.GreaterThanOrEqualTo(v, "0.3.0"); ok {
		checkInterfaces(t, res, rt)
	}
	if out := inside(t, c, "ip", "-4", "-o", "addr", "show", "dev", "eth0"); !strings.Contains(out, ip.Address.String()) {
		t.Fatalf("eth0 in the container lacks %s: %s", ip.Address.String(), out)
	}
	if out := inside(t, c, "ip", "route", "show", "default"); !strings.Contains(out, "via "+ip.Gateway.String()) {
		t.Fatalf("no default route via %s in the container: %s", ip.Gateway, out)
	}
	if held := x.heldBy(rt.ContainerID); held != ip.Address.String() {
		t.Fatalf("IPAM holds %q for %s, want %s", held, rt.ContainerID, ip.Address.String())
	}
	veth := cni.HostVethName(rt.ContainerID, rt.IfName)
	hairpin := inside(t, &netnstest.Container{NS: x.h.NS}, "cat", "/sys/class/net/"+veth+"/brport/hairpin_mode")
	if strings.TrimSpace(hairpin) != "1" {
		t.Errorf("hairpin_mode of %s = %q, want 1 (hairpinMode defaults to true)", veth, hairpin)
	}
	if ok, _ := version.GreaterThanOrEqualTo(v, "0.4.0"); ok {
		if err := x.client().CheckNetworkList(context.Background(), l, rt); err != nil {
			t.Fatalf("CHECK: %v", err)
		}
	}
	x.del(l, rt)
	x.del(l, rt) // idempotent
	if held := x.heldBy(rt.ContainerID); held != "" {
		t.Fatalf("after DEL IPAM still holds %q for %s", held, rt.ContainerID)
	}
	if x.hostLinkExists(veth) {
		t.Fatalf("host veth %s left after DEL", veth)
	}
	if _, err := netnstest.Output(c.NS, "ip", "link", "show", "dev", "eth0"); err == nil {
		t.Fatal("eth0 left in the container after DEL")
	}
}

// checkInterfaces: bridge, host veth, container interface (index 2,
// named by the IP), as libcni parsed them.
func checkInterfaces(t *testing.T, res *current.Result, rt *libcni.RuntimeConf) {
	t.Helper()
	if len(res.Interfaces) != 3 {
		t.Fatalf("want 3 interfaces, got %v", res.Interfaces)
	}
	want := []string{"weave", cni.HostVethName(rt.ContainerID, rt.IfName), rt.IfName}
	for i, ifc := range res.Interfaces {
		if ifc.Name != want[i] || ifc.Mac == "" {
			t.Fatalf("interface %d = %+v, want name %s with a MAC", i, ifc, want[i])
		}
	}
	if res.Interfaces[2].Sandbox != rt.NetNS {
		t.Fatalf("container interface sandbox %q, want %q", res.Interfaces[2].Sandbox, rt.NetNS)
	}
	if res.IPs[0].Interface == nil || *res.IPs[0].Interface != 2 {
		t.Fatalf("IP names interface %v, want 2", res.IPs[0].Interface)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestCheckReportsDrift: CHECK fails, naming what changed, when the
// address or the interface is gone.
func TestCheckReportsDrift(t *testing.T) {
	x := newHost(t)
	l := x.conflist("1.1.0", "")
	c, rt := x.container()
	res := x.add(l, rt)
	inside(t, c, "ip", "addr", "del", res.IPs[0].Address.String(), "dev", "eth0")
	err := x.client().CheckNetworkList(context.Background(), l, rt)
	cniError(t, err, cni.ErrDrift, "lacks address "+res.IPs[0].Address.String())
	inside(t, c, "ip", "link", "del", "eth0")
	err = x.client().CheckNetworkList(context.Background(), l, rt)
	cniError(t, err, types.ErrUnknownContainer, "interface eth0 is gone")
	x.del(l, rt)
	if x.heldBy(rt.ContainerID) != "" || x.records() != 0 {
		t.Fatal("DEL after drift left the address or the record")
	}
}

// TestDelWithoutNetns: DEL with an empty CNI_NETNS (containerd) and with
// a namespace that no longer exists still releases everything.
func TestDelWithoutNetns(t *testing.T) {
	x := newHost(t)
	l := x.conflist("1.1.0", "")
	c1, rt1 := x.container()
	x.add(l, rt1)
	empty := *rt1
	empty.NetNS = ""
	x.del(l, &empty)
	if _, err := netnstest.Output(c1.NS, "ip", "link", "show", "dev", "eth0"); err == nil {
		t.Error("eth0 still in the container after DEL with an empty netns")
	}
	_, rt2 := x.container()
	x.add(l, rt2)
	if out, err := exec.Command("ip", "netns", "del", filepath.Base(rt2.NetNS)).CombinedOutput(); err != nil {
		t.Fatalf("delete namespace: %v %s", err, out)
	}
	x.del(l, rt2)
	for _, rt := range []*libcni.RuntimeConf{rt1, rt2} {
		if held := x.heldBy(rt.ContainerID); held != "" {
			t.Errorf("IPAM still holds %q for %s", held, rt.ContainerID)
		}
	}
	netnstest.WaitFor(t, 10*time.Second, "host veths to go", func() error {
		if n := x.vethCount(); n != 0 {
			return fmt.Errorf("%d vethwepl links left", n)
		}
		return nil
	})
	if x.records() != 0 {
		t.Errorf("%d attachment records left", x.records())
	}
}

// TestGCReleasesOnlyItsOwnStale: GC frees the attachment the runtime
// forgot, keeps the valid one and never touches a `weave attach` address.
func TestGCReleasesOnlyItsOwnStale(t *testing.T) {
	x := newHost(t)
	l := x.conflist("1.1.0", "")
	_, keep := x.container()
	x.add(l, keep)
	_, stale := x.container()
	lost := x.clientCache(t.TempDir()) // a runtime that lost its cache
	if _, err := lost.AddNetworkList(context.Background(), l, stale); err != nil {
		t.Fatal(err)
	}
	other := x.tp.NewContainer(x.h, "attached", "")
	attached, err := x.tp.Weave(x.h, "attach", netnstest.NSPath(other.NS))
	if err != nil {
		t.Fatalf("weave attach: %v %s", err, attached)
	}
	valid := []types.GCAttachment{{ContainerID: keep.ContainerID, IfName: keep.IfName}}
	if err := x.client().GCNetworkList(context.Background(), l, &libcni.GCArgs{ValidAttachments: valid}); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if x.heldBy(stale.ContainerID) != "" || x.hostLinkExists(cni.HostVethName(stale.ContainerID, "eth0")) {
		t.Fatal("GC left the stale attachment's address or veth")
	}
	if x.heldBy(keep.ContainerID) == "" || !x.hostLinkExists(cni.HostVethName(keep.ContainerID, "eth0")) {
		t.Fatal("GC removed the valid attachment")
	}
	if _, all := x.routerGET("/ip"); !strings.Contains(all, strings.TrimSpace(attached)+"/") {
		t.Fatalf("GC released the `weave attach` address %s: %s", strings.TrimSpace(attached), all)
	}
	x.del(l, keep)
}

// TestStatus: success while the router runs, 50 once it is stopped.
func TestStatus(t *testing.T) {
	x := newHost(t)
	l := x.conflist("1.1.0", "")
	if err := x.client().GetStatusNetworkList(context.Background(), l); err != nil {
		t.Fatalf("STATUS with the router up: %v", err)
	}
	err := x.client("WEAVE_HTTP_ADDR=127.0.0.1:1").GetStatusNetworkList(context.Background(), l)
	cniError(t, err, types.ErrPluginNotAvailable, "is weave running? start it with `weave launch`")
	if out, err := x.tp.Weave(x.h, "stop"); err != nil {
		t.Fatalf("weave stop: %v %s", err, out)
	}
	err = x.client().GetStatusNetworkList(context.Background(), l)
	cniError(t, err, types.ErrPluginNotAvailable, "")
}

// TestErrorsLeakNothing: bad configs, the host netns and a router that
// does not answer give CNI errors naming the cause, and leave no veth,
// address or record behind.
func TestErrorsLeakNothing(t *testing.T) {
	x := newHost(t)
	cases := []struct {
		name, extra string
		env         []string
		hostNS      bool
		netns       string   // replaces CNI_NETNS
		prep        []string // run in the container first
		code        uint
		msg         string
	}{
		{name: "mtu type", extra: `"mtu": "big"`, code: types.ErrInvalidNetworkConfig, msg: `"mtu"`},
		{name: "bad subnet", extra: `"ipam": {"subnet": "10.40.0.0/33"}`, code: types.ErrInvalidNetworkConfig, msg: `ipam.subnet": "10.40.0.0/33"`},
		{name: "subnet outside range", extra: `"ipam": {"subnet": "10.99.0.0/24"}`, code: types.ErrInvalidNetworkConfig, msg: "10.99.0.0/24"},
		{name: "bad route", extra: `"ipam": {"routes": [{"dst": "nowhere"}]}`, code: types.ErrInvalidNetworkConfig, msg: `ipam.routes[0].dst": "nowhere"`},
		{name: "isGateway", extra: `"isGateway": true`, code: types.ErrUnsupportedField, msg: "isGateway"},
		{name: "router down", env: []string{"WEAVE_HTTP_ADDR=127.0.0.1:1"}, code: types.ErrTryAgainLater, msg: "is weave running? start it with `weave launch`"},
		{name: "not a bridge", extra: `"bridge": "lo"`, code: types.ErrInternal, msg: "attach the container to bridge lo"},
		{name: "host netns", hostNS: true, code: types.ErrInvalidNetNS, msg: "host's own network namespace"},
		{name: "no such netns", netns: "/var/run/netns/no-such-ns", code: types.ErrInvalidNetNS, msg: `"/var/run/netns/no-such-ns" is not a network namespace`},
		{name: "ifname taken", prep: []string{"ip", "link", "add", "eth0", "type", "veth", "peer", "name", "p0"},
			code: types.ErrInvalidEnvironmentVariables, msg: `CNI_IFNAME "eth0" already exists`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x.t = t
			c, rt := x.container()
			if tc.hostNS {
				rt.NetNS = x.nsPath()
			}
			if tc.netns != "" {
				rt.NetNS = tc.netns
			}
			if tc.prep != nil {
				inside(t, c, tc.prep...)
			}
			_, err := x.client(tc.env...).AddNetworkList(context.Background(), x.conflist("1.1.0", tc.extra), rt)
			cniError(t, err, tc.code, tc.msg)
			if n := x.vethCount(); n != 0 {
				t.Errorf("%d veths leaked", n)
			}
			if held := x.heldBy(rt.ContainerID); held != "" {
				t.Errorf("address %s leaked", held)
			}
			if n := x.records(); n != 0 {
				t.Errorf("%d records leaked", n)
			}
		})
	}
}

// TestRouterWithoutIPAM: ADD names the cause when the router runs with
// --ipalloc-range "", and STATUS reports the plugin unavailable.
func TestRouterWithoutIPAM(t *testing.T) {
	x := newHostRange(t, "")
	l := x.conflist("1.1.0", "")
	_, rt := x.container()
	_, err := x.client().AddNetworkList(context.Background(), l, rt)
	cniError(t, err, types.ErrPluginNotAvailable, `runs without IPAM (--ipalloc-range "")`)
	if n := x.vethCount(); n != 0 || x.records() != 0 {
		t.Fatalf("failed ADD left %d veths, %d records", n, x.records())
	}
	err = x.client().GetStatusNetworkList(context.Background(), l)
	cniError(t, err, types.ErrPluginNotAvailable, "without IPAM")
}

// TestSubnetExposesBridge: ipam.subnet picks the subnet, and the bridge
// gets an address there (the gateway) when it had none.
func TestSubnetExposesBridge(t *testing.T) {
	netnstest.RequireTools(t, "ping")
	x := newHost(t)
	l := x.conflist("1.0.0", `"hairpinMode": false, "mtu": 1400, "ipam": {"subnet": "10.40.7.0/24"}, "dns": {"nameservers": ["10.40.7.53"], "search": ["weave.local"]}`)
	c, rt := x.container()
	res := x.add(l, rt)
	addr, gw := res.IPs[0].Address.String(), res.IPs[0].Gateway.String()
	if len(res.DNS.Nameservers) != 1 || res.DNS.Nameservers[0] != "10.40.7.53" || len(res.DNS.Search) != 1 {
		t.Errorf("result dns %+v, want the config's", res.DNS)
	}
	if !strings.HasPrefix(addr, "10.40.7.") || !strings.HasPrefix(gw, "10.40.7.") {
		t.Fatalf("address %s via %s, want both in 10.40.7.0/24", addr, gw)
	}
	br := inside(t, &netnstest.Container{NS: x.h.NS}, "ip", "-4", "-o", "addr", "show", "dev", "weave")
	if !strings.Contains(br, gw+"/24") {
		t.Fatalf("bridge lacks the gateway %s/24: %s", gw, br)
	}
	if out := inside(t, c, "ip", "-o", "link", "show", "dev", "eth0"); !strings.Contains(out, "mtu 1400") {
		t.Errorf("eth0 MTU not 1400: %s", out)
	}
	veth := cni.HostVethName(rt.ContainerID, rt.IfName)
	hp := inside(t, &netnstest.Container{NS: x.h.NS}, "cat", "/sys/class/net/"+veth+"/brport/hairpin_mode")
	if strings.TrimSpace(hp) != "0" {
		t.Errorf("hairpin_mode = %q with hairpinMode false", hp)
	}
	if _, err := netnstest.Ping(c.NS, gw, 1); err != nil {
		t.Fatalf("container cannot ping its gateway: %v", err)
	}
	x.del(l, rt)
}

// TestDelWhileRouterDown: a DEL that cannot reach the router fails (so
// the runtime retries) and keeps the record; the retry releases the
// address. Nothing is leaked in between.
func TestDelWhileRouterDown(t *testing.T) {
	x := newHost(t)
	l := x.conflist("1.1.0", "")
	_, rt := x.container()
	res := x.add(l, rt)
	err := x.client("WEAVE_HTTP_ADDR=127.0.0.1:1").DelNetworkList(context.Background(), l, rt)
	cniError(t, err, types.ErrTryAgainLater, "is weave running?")
	if x.records() != 1 || x.heldBy(rt.ContainerID) != res.IPs[0].Address.String() {
		t.Fatalf("failed DEL must keep the record (%d) and the address (%q)", x.records(), x.heldBy(rt.ContainerID))
	}
	x.del(l, rt)
	if x.records() != 0 || x.heldBy(rt.ContainerID) != "" || x.vethCount() != 0 {
		t.Fatal("retried DEL left a record, the address or a veth")
	}
}

// TestHTTPAddrFromConfig: a router on another API address is reached
// through the config's httpAddr (kubelet passes plugins no environment).
func TestHTTPAddrFromConfig(t *testing.T) {
	x := newHostAt(t, ipRange, "127.0.0.1:7784")
	_, rt := x.container()
	_, err := x.client().AddNetworkList(context.Background(), x.conflist("1.1.0", ""), rt)
	cniError(t, err, types.ErrTryAgainLater, "no weave router answers at http://127.0.0.1:6784")
	l := x.conflist("1.1.0", `"httpAddr": "127.0.0.1:7784"`)
	res := x.add(l, rt)
	if held := x.heldBy(rt.ContainerID); held != res.IPs[0].Address.String() {
		t.Fatalf("IPAM at 7784 holds %q, want %s", held, res.IPs[0].Address.String())
	}
	if err := x.client().GetStatusNetworkList(context.Background(), l); err != nil {
		t.Fatalf("STATUS: %v", err)
	}
	x.del(l, rt)
	if x.heldBy(rt.ContainerID) != "" {
		t.Fatal("DEL through httpAddr did not release")
	}
}

// TestStatusWhileAwaitingConsensus: with a second initial peer that never
// comes, the first allocation waits for consensus; meanwhile STATUS says
// the plugin is not available, naming the IPAM state.
func TestStatusWhileAwaitingConsensus(t *testing.T) {
	x := newHostWith(t, "", "--no-fastdp", "--ipalloc-range", ipRange, "192.168.100.99")
	l := x.conflist("1.1.0", "")
	if err := x.client().GetStatusNetworkList(context.Background(), l); err != nil {
		t.Fatalf("STATUS before any request (IPAM idle): %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	_, rt := x.container()
	go func() { _, err := x.client().AddNetworkList(ctx, l, rt); done <- err }()
	defer func() { cancel(); <-done }()
	netnstest.WaitFor(t, 20*time.Second, "STATUS to report awaiting consensus", func() error {
		err := x.client().GetStatusNetworkList(context.Background(), l)
		var te *types.Error
		if errors.As(err, &te) && te.Code == types.ErrPluginNotAvailable && strings.Contains(te.Msg, "awaiting consensus") {
			return nil
		}
		return fmt.Errorf("STATUS = %v", err)
	})
}

// TestDelInHostNetnsTouchesNothing: a DEL naming the host's own namespace
// (a runtime bug, or a DEL after the refused ADD) must not delete the
// host's interface of that name.
func TestDelInHostNetnsTouchesNothing(t *testing.T) {
	x := newHost(t)
	l := x.conflist("1.1.0", "")
	_, rt := x.container()
	rt.NetNS, rt.IfName = x.nsPath(), "eth0" // the host's underlay interface
	err := x.client().DelNetworkList(context.Background(), l, rt)
	cniError(t, err, types.ErrInvalidNetNS, "host's own network namespace")
	if !x.hostLinkExists("eth0") {
		t.Fatal("DEL deleted the host's eth0")
	}
}
