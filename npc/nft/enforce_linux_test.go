//go:build linux

package nft

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vishvananda/netlink"

	"github.com/seedf75a49c6/weave/internal/netdev"
	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/npc"
	"github.com/seedf75a49c6/weave/npc/npctest"
)

// host is a namespace host with a weave bridge and pod namespaces on it.
type host struct {
	t    *testing.T
	path string
	pods map[string]*pod
	enf  *Enforcer
}

type pod struct {
	npc.Pod
	path string
}

const hostIP = "10.32.0.254"

func newHost(t *testing.T) *host {
	netnstest.RequireRoot(t)
	_, path := netnstest.NewNS(t)
	h := &host{t: t, path: path, pods: map[string]*pod{}}
	h.do(func() error {
		if err := netdev.EnsureBridge(netdev.BridgeConfig{}); err != nil {
			return err
		}
		if _, err := EnsureBridgeNetfilter(); err != nil {
			return err
		}
		return addAddr("weave", hostIP+"/24")
	})
	h.do(func() error {
		var err error
		h.enf, err = New(Config{})
		return err
	})
	t.Cleanup(func() { h.enf.Close() })
	return h
}

func addAddr(dev, cidr string) error {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return err
	}
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		return err
	}
	return netlink.AddrAdd(l, a)
}

func (h *host) do(fn func() error) {
	h.t.Helper()
	if err := netns.Do(h.path, fn); err != nil {
		h.t.Fatal(err)
	}
}

// addPod creates a pod namespace attached to the bridge, serving TCP and
// UDP on ports 80, 81 and 83.
func (h *host) addPod(ns, name, ip string, lbl map[string]string, ports ...npc.ContainerPort) *pod {
	_, path := netnstest.NewNS(h.t)
	p := &pod{Pod: npc.Pod{Namespace: ns, Name: name, Labels: lbl, IP: netip.MustParseAddr(ip), Local: true, Ports: ports}, path: path}
	h.do(func() error {
		_, err := netdev.AttachContainer(netdev.AttachConfig{NetNS: path, ContainerID: ns + name + ip,
			Addrs: []netip.Prefix{netip.MustParsePrefix(ip + "/24")}})
		return err
	})
	npctest.Serve(h.t, path, 80, 81, 83)
	h.pods[ns+"/"+name] = p
	return p
}

func (h *host) input(pols ...*networkingv1.NetworkPolicy) npc.Input {
	in := npc.Input{Policies: pols}
	for _, ns := range []string{"x", "y"} {
		in.Namespaces = append(in.Namespaces, npc.Namespace{Name: ns, Labels: map[string]string{"ns": ns}})
	}
	for _, p := range h.pods {
		in.Pods = append(in.Pods, p.Pod)
	}
	return in
}

func (h *host) apply(pols ...*networkingv1.NetworkPolicy) *npc.Model {
	h.t.Helper()
	m := npc.Translate(h.input(pols...))
	if _, err := h.enf.Apply(m); err != nil {
		h.t.Fatal(err)
	}
	return m
}

type check struct {
	src, dst  *pod
	proto     string
	port      int
	want, got bool
}

var protoNum = map[string]npc.Proto{"tcp": npc.TCP, "udp": npc.UDP}

// probeAll opens a connection for every pod pair, protocol and port at once
// and returns what the kernel did next to what the model says.
func (h *host) probeAll(m *npc.Model, ports map[string][]int) []check {
	var checks []check
	for _, s := range h.pods {
		for _, d := range h.pods {
			if s == d {
				continue
			}
			for proto, list := range ports {
				for _, port := range list {
					c := npc.Conn{Src: s.IP, Dst: d.IP, Proto: protoNum[proto], Port: uint16(port)}
					checks = append(checks, check{src: s, dst: d, proto: proto, port: port, want: m.Allows(c)})
				}
			}
		}
	}
	var wg sync.WaitGroup
	for i := range checks {
		wg.Go(func() {
			c := &checks[i]
			ok, err := npctest.Probe(c.src.path, c.proto, c.dst.IP.String(), c.port, 700*time.Millisecond)
			if err != nil {
				h.t.Error(err)
			}
			c.got = ok
		})
	}
	wg.Wait()
	return checks
}

func (c check) String() string {
	return fmt.Sprintf("%s/%s -> %s/%s %s/%d", c.src.Namespace, c.src.Name, c.dst.Namespace, c.dst.Name, c.proto, c.port)
}

// verify fails for every probe where the kernel disagreed with the model
// and returns the probes' outcomes by name, for pinned expectations.
func verify(t *testing.T, checks []check) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: kernel allowed=%v, model allowed=%v", c, c.got, c.want)
		}
		out[c.String()] = c.got
	}
	return out
}

func pinned(t *testing.T, got map[string]bool, want map[string]bool) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: allowed=%v (probed=%v), want %v", k, g, ok, w)
		}
	}
}

func pol(ns, name string, sel map[string]string, types ...networkingv1.PolicyType) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}, PolicyTypes: types}}
}

func nport(proto string, p intstr.IntOrString, end ...int32) networkingv1.NetworkPolicyPort {
	pr := map[string]corev1.Protocol{"tcp": "TCP", "udp": "UDP"}[proto]
	np := networkingv1.NetworkPolicyPort{Protocol: &pr, Port: &p}
	if len(end) > 0 {
		np.EndPort = &end[0]
	}
	return np
}

// testPolicies: x admits x/b on the named port "web" (x/a serves it on 80,
// x/b on 81) and namespace y on UDP 81; y/a may only send TCP 80-81 into
// 10.32.0.0/24 except x/b.
func testPolicies() []*networkingv1.NetworkPolicy {
	x := pol("x", "ingress", map[string]string{})
	x.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{
		{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pod": "b"}}}},
			Ports: []networkingv1.NetworkPolicyPort{nport("tcp", intstr.FromString("web"))}},
		{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ns": "y"}}}},
			Ports: []networkingv1.NetworkPolicyPort{nport("udp", intstr.FromInt32(81))}},
	}
	y := pol("y", "egress", map[string]string{"pod": "a"}, networkingv1.PolicyTypeEgress)
	y.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{
		To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.32.0.0/24", Except: []string{"10.32.0.2/32"}}}},
		Ports: []networkingv1.NetworkPolicyPort{nport("tcp", intstr.FromInt32(80), 81)},
	}}
	return []*networkingv1.NetworkPolicy{x, y}
}

func threePods(h *host) {
	h.addPod("x", "a", "10.32.0.1", map[string]string{"pod": "a"}, npc.ContainerPort{Name: "web", Proto: npc.TCP, Port: 80})
	h.addPod("x", "b", "10.32.0.2", map[string]string{"pod": "b"}, npc.ContainerPort{Name: "web", Proto: npc.TCP, Port: 81})
	h.addPod("y", "a", "10.32.0.4", map[string]string{"pod": "a"})
}

var probePorts = map[string][]int{"tcp": {80, 81, 83}, "udp": {81}}

// TestKernelAgreesWithModel sends real TCP and UDP connections between
// three pods on one bridge and checks every outcome against Model.Allows
// (whose semantics the golden tables pin), plus a few outcomes by hand.
func TestKernelAgreesWithModel(t *testing.T) {
	h := newHost(t)
	threePods(h)
	got := verify(t, h.probeAll(h.apply(), probePorts))
	pinned(t, got, map[string]bool{"y/a -> x/b tcp/83": true, "x/a -> y/a udp/81": true})

	got = verify(t, h.probeAll(h.apply(testPolicies()...), probePorts))
	pinned(t, got, map[string]bool{
		"x/b -> x/a tcp/80": true,  // named port web = 80 on x/a
		"x/b -> x/a tcp/81": false, // ... not 81
		"x/a -> x/b tcp/81": false, // x/a is not pod=b
		"y/a -> x/a udp/81": false, // x admits it, y/a's egress does not
		"y/a -> x/a tcp/80": false, // y/a's egress admits it, x does not
		"x/a -> y/a tcp/83": true,  // y/a is not isolated for ingress
		"y/a -> x/b tcp/81": false, // except
	})
	// Traffic from the host to its pods passes (kubelet probes).
	if ok, err := npctest.Probe(h.path, "tcp", "10.32.0.1", 83, 2*time.Second); err != nil || !ok {
		t.Errorf("host -> isolated x/a tcp/83: allowed=%v err=%v, want allowed", ok, err)
	}
	h.assertBlockedCounted(npc.TCP, 83)
}

func (h *host) assertBlockedCounted(p npc.Proto, port uint16) {
	h.t.Helper()
	list, err := h.enf.Blocked()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, b := range list {
		if b.Proto == p && b.Port == port && b.Packets > 0 {
			return
		}
	}
	h.t.Errorf("no blocked-connection counter for %s/%d in %+v", p, port, list)
}

// An allowed connection opened before a swap to a policy that denies new
// ones keeps working; new connections are denied at once.
func TestEstablishedSurvivesSwap(t *testing.T) {
	h := newHost(t)
	threePods(h)
	h.apply()
	var ln net.Listener
	h.do2(h.pods["x/a"].path, func() error {
		var err error
		ln, err = net.Listen("tcp4", ":90")
		return err
	})
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	var c net.Conn
	h.do2(h.pods["y/a"].path, func() error {
		var err error
		c, err = net.DialTimeout("tcp4", "10.32.0.1:90", 2*time.Second)
		return err
	})
	defer c.Close()
	srv := <-accepted
	defer srv.Close()
	h.apply(pol("x", "deny", map[string]string{}))
	for i := range 3 {
		msg := fmt.Sprintf("ping %d\n", i)
		_ = srv.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatalf("write on established connection after swap: %v", err)
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(srv, buf); err != nil {
			t.Fatalf("established connection broken by swap: %v", err)
		}
		h.apply(pol("x", "deny", map[string]string{}))
	}
	if ok, _ := npctest.Probe(h.pods["y/a"].path, "tcp", "10.32.0.1", 83, 700*time.Millisecond); ok {
		t.Errorf("new connection into denied x/a got through")
	}
}

func (h *host) do2(path string, fn func() error) {
	h.t.Helper()
	if err := netns.Do(path, fn); err != nil {
		h.t.Fatal(err)
	}
}

// While the table is swapped again and again (pods coming and going around
// a denied pod), no new connection to the denied pod ever gets through.
func TestNoWindowDuringSwaps(t *testing.T) {
	h := newHost(t)
	threePods(h)
	deny := pol("x", "deny-a", map[string]string{"pod": "a"})
	h.apply(deny)
	stop := make(chan struct{})
	leaks := make(chan string, 100)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, proto := range []string{"tcp", "udp"} {
				if ok, _ := npctest.Probe(h.pods["y/a"].path, proto, "10.32.0.1", 81, 200*time.Millisecond); ok {
					leaks <- proto
				}
			}
		}
	})
	swaps := 0
	for start := time.Now(); time.Since(start) < 2*time.Second; swaps++ {
		extra := npc.Pod{Namespace: "x", Name: fmt.Sprintf("p%d", swaps), IP: netip.AddrFrom4([4]byte{10, 32, 1, byte(swaps)}), Local: true}
		in := h.input(deny)
		in.Pods = append(in.Pods, extra)
		if _, err := h.enf.Apply(npc.Translate(in)); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d table swaps while probing", swaps)
	if len(leaks) > 0 {
		t.Errorf("%d probes reached the denied pod during table swaps", len(leaks))
	}
}

func TestMarkIsTheRoutersGuardMark(t *testing.T) {
	if Mark != netdev.NPCMark {
		t.Fatalf("nft.Mark %#x != netdev.NPCMark %#x: the router's guard would drop what weave-npc allows", Mark, netdev.NPCMark)
	}
}

// With the router's --expect-npc guard, pods are closed until weave-npc
// loads its table, open per policy while it is there, and closed again
// when it is removed; host-to-pod traffic passes throughout.
func TestRouterGuard(t *testing.T) {
	h := newHost(t)
	h.addPod("x", "a", "10.32.0.1", map[string]string{"pod": "a"})
	h.addPod("y", "a", "10.32.0.4", map[string]string{"pod": "a"})
	h.do(func() error { return netdev.EnsureNPCGuard("weave") })
	reach := func() bool {
		ok, err := npctest.Probe(h.pods["y/a"].path, "tcp", "10.32.0.1", 80, 700*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if reach() {
		t.Errorf("guard on, no weave-npc table: connection got through")
	}
	h.apply()
	if !reach() {
		t.Errorf("guard on, weave-npc table without policies: connection dropped")
	}
	h.do(h.enf.Remove)
	if reach() {
		t.Errorf("guard on, weave-npc table removed: connection got through")
	}
	if ok, err := npctest.Probe(h.path, "tcp", "10.32.0.1", 80, 2*time.Second); err != nil || !ok {
		t.Errorf("host -> pod with the guard on: allowed=%v err=%v, want allowed", ok, err)
	}
	h.do(netdev.RemoveNPCGuard)
	if !reach() {
		t.Errorf("guard removed: connection dropped")
	}
}

// `nft list table inet weave-npc` (docs/npc.md) shows readable rules
// carrying the policy they come from, and the drop counters per port.
func TestListTableIsReadable(t *testing.T) {
	netnstest.RequireTools(t, "nft")
	h := newHost(t)
	threePods(h)
	h.probeAll(h.apply(testPolicies()...), map[string][]int{"tcp": {83}})
	var out []byte
	h.do(func() error {
		var err error
		out, err = exec.Command("nft", "list", "table", "inet", DefaultTable).CombinedOutput()
		return err
	})
	for _, want := range []string{
		`oifname "weave" ip daddr @ingress-isolated jump ingress`,
		`ip daddr . meta l4proto . th dport @named-`,
		`comment "x/ingress ingress[0]"`,
		`comment "peers ipBlock 10.32.0.0/24 except 10.32.0.2/32"`,
		`elements = { 10.32.0.0/31, 10.32.0.3-10.32.0.255 }`,
		`tcp . 83 counter packets `,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("nft list table lacks %q:\n%s", want, out)
		}
	}
}

// TestClosedEnforcerTouchesNoNamespace: after Close, calls fail instead of
// opening a transient netlink connection in the caller's namespace (a
// controller still applying after Close once left its table in the root
// namespace).
func TestClosedEnforcerTouchesNoNamespace(t *testing.T) {
	h := newHost(t)
	if err := h.enf.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.enf.Apply(&npc.Model{}); !errors.Is(err, errClosed) {
		t.Errorf("Apply after Close: %v, want errClosed", err)
	}
	if err := h.enf.Remove(); !errors.Is(err, errClosed) {
		t.Errorf("Remove after Close: %v, want errClosed", err)
	}
	if _, err := h.enf.Blocked(); !errors.Is(err, errClosed) {
		t.Errorf("Blocked after Close: %v, want errClosed", err)
	}
}
