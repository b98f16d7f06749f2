package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/seedf75a49c6/weave/internal/netdev"
	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/npc/npctest"
)

// TestLaunchOnLoopbackOnlyHost: a host whose only interface is loopback
// (no private address, no default route) still runs the router, with
// liveness off and a WARN saying why, instead of failing to start.
func TestLaunchOnLoopbackOnlyHost(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 1, noLaunch: []int{1}})
	h := cl.host(1)
	if out, err := netnstest.Output(h.NS, "ip", "link", "del", "eth0"); err != nil {
		t.Fatalf("remove eth0: %v\n%s", err, out)
	}
	if out, err := cl.tp.Weave(h, "launch"); err != nil {
		t.Fatalf("weave launch on a loopback-only host: %v\n%s", err, out)
	}
	netnstest.WaitFor(t, 20*time.Second, "the router answers `weave status`", func() error {
		out, err := cl.tp.Weave(h, "status")
		if err != nil || !strings.Contains(out, "Service: router") {
			return fmt.Errorf("%v\n%s", err, out)
		}
		return nil
	})
	log, err := os.ReadFile(filepath.Join(h.RunDir, "weaver.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "liveness is off") || !strings.Contains(string(log), "level=WARN") {
		t.Errorf("weaver.log has no WARN that liveness is off:\n%s", netnstest.Tail(string(log), 30))
	}
	if strings.Contains(string(log), "no private IP address found") {
		t.Errorf("weaver.log still has memberlist's failure:\n%s", netnstest.Tail(string(log), 30))
	}
}

// TestResetRemovesNPCGuard: `weave reset` deletes the router's nftables
// table inet weave-guard (--expect-npc), which `weave stop` keeps so pods
// stay closed while the router is down.
func TestResetRemovesNPCGuard(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 1, expectNPC: true})
	h := cl.host(1)
	if !nftTableExists(t, h.NS, netdev.NPCGuardTable) {
		t.Fatalf("no table inet %s after weave launch --expect-npc", netdev.NPCGuardTable)
	}
	cl.weave(1, "stop")
	if !nftTableExists(t, h.NS, netdev.NPCGuardTable) {
		t.Fatalf("weave stop removed table inet %s; it must keep pods closed", netdev.NPCGuardTable)
	}
	cl.weave(1, "reset", "--force")
	if nftTableExists(t, h.NS, netdev.NPCGuardTable) {
		t.Errorf("table inet %s is still there after weave reset", netdev.NPCGuardTable)
	}
}

// nftTableExists lists the inet tables of namespace ns.
func nftTableExists(t *testing.T, ns, name string) bool {
	t.Helper()
	found := false
	err := netns.Do(netnstest.NSPath(ns), func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
		for _, tb := range tables {
			found = found || tb.Name == name
		}
		return err
	})
	if err != nil {
		t.Fatalf("list nftables tables in %s: %v", ns, err)
	}
	return found
}

// checkEgressToOwnNode: a pod's connections to its own node's addresses
// (the bridge's weave expose address and eth0's) meet its egress policy:
// y/a, under yEgressNamedPolicy, reaches neither until a policy allows
// eth0's address on TCP 80, and then only that; x/a, without egress
// policy, reaches both.
func (nc *npcCluster) checkEgressToOwnNode() {
	t := nc.t
	h := nc.host(1)
	const exposed = "10.2.1.254"
	nc.weave(1, "expose", exposed+"/24")
	npctest.Serve(t, netnstest.NSPath(h.NS), 80, 81)
	for _, id := range []string{"x/a", "y/a"} {
		if out, err := netnstest.Output(nc.pods[id].c.NS, "ip", "route", "add", h.IP+"/32", "via", exposed); err != nil {
			t.Fatalf("route to the node from %s: %v\n%s", id, err, out)
		}
	}
	// UDP only to the bridge's address: the test server answers from the
	// address of the route back, which for eth0's would not match.
	probes := []probe{
		{"x/a", exposed, "tcp", 80}, {"x/a", exposed, "udp", 81}, {"x/a", h.IP, "tcp", 80},
		{"y/a", exposed, "tcp", 80}, {"y/a", exposed, "udp", 81}, {"y/a", h.IP, "tcp", 80}, {"y/a", h.IP, "tcp", 81},
	}
	expect := func(what string, denied ...string) {
		t.Helper()
		var got []string
		err := netnstest.Poll(30*time.Second, func() error {
			got = nil
			for _, p := range probes {
				ok, err := npctest.Probe(netnstest.NSPath(nc.pods[p.src].c.NS), p.proto, p.dst, p.port, 800*time.Millisecond)
				if err != nil || !ok {
					got = append(got, fmt.Sprintf("%s->%s %s/%d", p.src, p.dst, p.proto, p.port))
				}
			}
			if !slices.Equal(got, denied) {
				return fmt.Errorf("denied %q, want %q", got, denied)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s: %d probes to h1's own addresses, %d denied as the policies say", what, len(probes), len(denied))
	}
	ys := func(dst string, proto string, port int) string { return fmt.Sprintf("y/a->%s %s/%d", dst, proto, port) }
	expect("y/a's egress policy covers its node's addresses",
		ys(exposed, "tcp", 80), ys(exposed, "udp", 81), ys(h.IP, "tcp", 80), ys(h.IP, "tcp", 81))
	tcp, p80 := corev1.ProtocolTCP, intstr.FromInt32(80)
	nc.createPolicy(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "y", Name: "egress-node"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pod": "a"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: h.IP + "/32"}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p80}},
			}}}})
	expect("plus egress of y/a to its node's eth0 address on TCP 80",
		ys(exposed, "tcp", 80), ys(exposed, "udp", 81), ys(h.IP, "tcp", 81))
}
