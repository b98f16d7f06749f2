package npc

import (
	"net/netip"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestModelGolden pins the sets and rules of node1 for a few scenarios: the
// shape npc/nft loads (one rule per policy rule and port kind, shared sets).
func TestModelGolden(t *testing.T) {
	var b strings.Builder
	for _, sc := range scenarios() {
		switch sc.name {
		case "multiple policies in x add up (from x/b, from namespace z)",
			"egress of x/a to ipBlock 10.32.0.0/24 except y/b",
			"ingress into x on named port web (x/b serves it on 81)":
		default:
			continue
		}
		m := Translate(Input{Pods: fixturePods(true, sc.relabel), Namespaces: fixtureNamespaces(), Policies: sc.pols})
		b.WriteString("== " + sc.name + "\n" + m.String())
	}
	golden(t, "model.golden", b.String())
}

func TestIPBlockExcept(t *testing.T) {
	for _, tc := range []struct {
		cidr   string
		except []string
		want   string
	}{
		{"10.0.0.0/8", nil, "10.0.0.0-10.255.255.255"},
		{"10.0.0.0/8", []string{"10.1.0.0/16", "10.0.0.0/24"}, "10.0.1.0-10.0.255.255, 10.2.0.0-10.255.255.255"},
		{"0.0.0.0/0", []string{"255.255.255.255/32"}, "0.0.0.0-255.255.255.254"},
		{"192.168.1.7/24", []string{"192.168.1.0/24"}, ""},
		{"10.9.9.9/32", nil, "10.9.9.9"},
	} {
		spans, _, err := ipBlock(&networkingv1.IPBlock{CIDR: tc.cidr, Except: tc.except})
		if err != nil {
			t.Fatalf("%s: %v", tc.cidr, err)
		}
		got := (&Set{Addrs: toRanges(spans)}).elements()
		if got != tc.want {
			t.Errorf("%s except %v = %q, want %q", tc.cidr, tc.except, got, tc.want)
		}
	}
}

// Unenforceable parts are reported, not silently dropped, and do not widen
// what the rest of the policy allows.
func TestWarnings(t *testing.T) {
	pol := withIngress(policy("x", "v6", all), onPorts(from(cidr("fd00::/64"), pods("pod", "b")), port("ICMP", intstr.FromInt32(1))))
	m := Translate(Input{Pods: fixturePods(true, nil), Namespaces: fixtureNamespaces(), Policies: []*networkingv1.NetworkPolicy{pol}})
	if len(m.Warnings) != 2 || !strings.Contains(m.Warnings[0], "only IPv4") || !strings.Contains(m.Warnings[1], `unknown protocol "ICMP"`) {
		t.Fatalf("warnings = %q", m.Warnings)
	}
	// The rule kept its peer but lost its only port: it allows nothing.
	c := Conn{Src: podIP("x", "b"), Dst: podIP("x", "a"), Proto: TCP, Port: 1}
	if m.Allows(c) {
		t.Errorf("x/b -> x/a allowed though the rule's only port is invalid")
	}
}

func TestEmptyIngressRuleAllowsAll(t *testing.T) {
	pol := withIngress(policy("x", "open", all), networkingv1.NetworkPolicyIngressRule{})
	m := Translate(Input{Pods: fixturePods(true, nil), Namespaces: fixtureNamespaces(), Policies: []*networkingv1.NetworkPolicy{pol}})
	c := Conn{Src: netip.MustParseAddr("192.0.2.1"), Dst: podIP("x", "a"), Proto: UDP, Port: 9}
	if !m.Allows(c) {
		t.Errorf("ingress: [{}] must allow every source and port")
	}
}
