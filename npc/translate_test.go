package npc

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var probes = []probe{{TCP, 80}, {TCP, 81}, {UDP, 81}, {SCTP, 80}, {TCP, 83}}

type scenario struct {
	name    string
	pols    []*networkingv1.NetworkPolicy
	relabel map[string]map[string]string
}

const (
	ing = networkingv1.PolicyTypeIngress
	egr = networkingv1.PolicyTypeEgress
)

var (
	all      = map[string]string{}
	tcpProto = corev1.ProtocolTCP
	udpProto = corev1.ProtocolUDP
)

func unionPolicies() []*networkingv1.NetworkPolicy {
	return []*networkingv1.NetworkPolicy{
		withIngress(policy("x", "from-b", all), from(pods("pod", "b"))),
		withIngress(policy("x", "from-z", all), from(namespaces("ns", "z"))),
	}
}

// scenarios are the upstream e2e suite's NetworkPolicy cases on the
// fixture; their reachability is pinned in testdata/reachability.golden.
func scenarios() []scenario {
	both := networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("ns", "y"), PodSelector: sel("pod", "a")}
	return []scenario{
		{name: "no policy: everything allowed"},
		{name: "deny-all ingress in x", pols: []*networkingv1.NetworkPolicy{policy("x", "deny", all, ing)}},
		{name: "allow ingress into x from namespace y", pols: []*networkingv1.NetworkPolicy{
			withIngress(policy("x", "from-y", all), from(namespaces("ns", "y")))}},
		{name: "allow ingress into x from pod a AND namespace y (one peer)", pols: []*networkingv1.NetworkPolicy{
			withIngress(policy("x", "from-ya", all), from(both))}},
		{name: "allow ingress into x from namespace y OR pod b of x (two peers)", pols: []*networkingv1.NetworkPolicy{
			withIngress(policy("x", "from-y-or-b", all), from(namespaces("ns", "y"), pods("pod", "b")))}},
		{name: "egress of x/a to ipBlock 10.32.0.0/24 except y/b", pols: []*networkingv1.NetworkPolicy{
			withEgress(policy("x", "to-block", map[string]string{"pod": "a"}, egr), to(cidr("10.32.0.0/24", "10.32.0.5/32")))}},
		{name: "ingress into x on named port web (x/b serves it on 81)", pols: []*networkingv1.NetworkPolicy{
			withIngress(policy("x", "web", all), onPorts(from(), port(tcpProto, intstr.FromString("web"))))}},
		{name: "egress of x/a to named port serve-81-udp only", pols: []*networkingv1.NetworkPolicy{
			withEgress(policy("x", "udp-only", map[string]string{"pod": "a"}, egr), onEgressPorts(to(), port(udpProto, intstr.FromString("serve-81-udp"))))}},
		{name: "ingress into y from x on TCP 80-82 (endPort)", pols: []*networkingv1.NetworkPolicy{
			withIngress(policy("y", "range", all), onPorts(from(namespaces("ns", "x")), port(tcpProto, intstr.FromInt32(80), 82)))}},
		{name: "multiple policies in x add up (from x/b, from namespace z)", pols: unionPolicies()},
		{name: "policy deleted: only from-b left", pols: unionPolicies()[:1]},
		{name: "ingress into z on SCTP 80 only", pols: []*networkingv1.NetworkPolicy{
			withIngress(policy("z", "sctp", all), onPorts(from(), port(corev1.ProtocolSCTP, intstr.FromInt32(80))))}},
		{name: "y isolated both ways: ingress from x, egress to y", pols: []*networkingv1.NetworkPolicy{
			withEgress(withIngress(policy("y", "both", all, ing, egr), from(namespaces("ns", "x"))), to(pods()))}},
		{name: "deny-all ingress on x/a, then x/a relabelled away from the selector", relabel: map[string]map[string]string{"x/a": {"pod": "q"}},
			pols: []*networkingv1.NetworkPolicy{policy("x", "deny-a", map[string]string{"pod": "a"}, ing)}},
		{name: "pod AND namespace peer, then y/a relabelled out of it", relabel: map[string]map[string]string{"y/a": {"pod": "q"}},
			pols: []*networkingv1.NetworkPolicy{withIngress(policy("x", "from-ya", all), from(both))}},
	}
}

func TestReachabilityGolden(t *testing.T) {
	var b strings.Builder
	for _, sc := range scenarios() {
		fmt.Fprintf(&b, "== %s\n", sc.name)
		writeGrids(&b, sc)
	}
	golden(t, "reachability.golden", b.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the translation; got:\n%s", path, got)
	}
}

// writeGrids prints one grid per distinct result, headed by the probes
// that give it.
func writeGrids(b *strings.Builder, sc scenario) {
	var order []string
	byGrid := map[string][]string{}
	for _, pr := range probes {
		g := reachability(sc.pols, sc.relabel, pr)
		if _, ok := byGrid[g]; !ok {
			order = append(order, g)
		}
		byGrid[g] = append(byGrid[g], pr.String())
	}
	for _, g := range order {
		fmt.Fprintf(b, "-- %s\n%s", strings.Join(byGrid[g], " "), g)
	}
}
