package npc

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The fixture follows the upstream netpol e2e suite: namespaces x, y, z with
// pods a, b, c each, spread over two nodes, every pod serving the same
// named ports (x/b serves "web" on 81 instead of 80, so per-pod resolution
// shows).
var nsNames, podNames = []string{"x", "y", "z"}, []string{"a", "b", "c"}

// node1 runs x/a, x/b, y/a, z/a; node2 the rest.
var onNode1 = map[string]bool{"x/a": true, "x/b": true, "y/a": true, "z/a": true}

func podIP(ns, pod string) netip.Addr {
	third := map[string]byte{"x": 0, "y": 0, "z": 1}[ns]
	fourth := byte(strings.Index("xyz", ns)*3+strings.Index("abc", pod)) + 1
	return netip.AddrFrom4([4]byte{10, 32, third, fourth})
}

func fixturePods(node1 bool, relabel map[string]map[string]string) []Pod {
	var out []Pod
	for _, ns := range nsNames {
		for _, name := range podNames {
			id := ns + "/" + name
			lbl := map[string]string{"pod": name}
			if l, ok := relabel[id]; ok {
				lbl = l
			}
			web := uint16(80)
			if id == "x/b" {
				web = 81
			}
			out = append(out, Pod{Namespace: ns, Name: name, Labels: lbl, IP: podIP(ns, name), Local: onNode1[id] == node1,
				Ports: []ContainerPort{{"web", TCP, web}, {"serve-81-udp", UDP, 81}, {"serve-80-sctp", SCTP, 80}}})
		}
	}
	return out
}

func fixtureNamespaces() []Namespace {
	var out []Namespace
	for _, ns := range nsNames {
		out = append(out, Namespace{Name: ns, Labels: map[string]string{"ns": ns}})
	}
	return out
}

type probe struct {
	proto Proto
	port  uint16
}

func (p probe) String() string { return fmt.Sprintf("%s/%d", p.proto, p.port) }

// reachability renders which pod may open a connection to which: one line
// per source, a column per destination, grouped by namespace; "." denied,
// "1" allowed, "-" the pod itself (never bridged).
func reachability(pols []*networkingv1.NetworkPolicy, relabel map[string]map[string]string, pr probe) string {
	models := map[bool]*Model{}
	for _, node1 := range []bool{true, false} {
		models[node1] = Translate(Input{Pods: fixturePods(node1, relabel), Namespaces: fixtureNamespaces(), Policies: pols})
	}
	var b strings.Builder
	for _, sns := range nsNames {
		for _, s := range podNames {
			fmt.Fprintf(&b, "%s/%s:", sns, s)
			for _, dns := range nsNames {
				b.WriteString(" ")
				for _, d := range podNames {
					b.WriteString(cell(models, sns+"/"+s, dns+"/"+d, pr))
				}
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func cell(models map[bool]*Model, src, dst string, pr probe) string {
	if src == dst {
		return "-"
	}
	sns, s, _ := strings.Cut(src, "/")
	dns, d, _ := strings.Cut(dst, "/")
	c := Conn{Src: podIP(sns, s), Dst: podIP(dns, d), Proto: pr.proto, Port: pr.port}
	// Each node runs its own model; a cross-node connection passes both.
	ok := models[onNode1[src]].Allows(c) && models[onNode1[dst]].Allows(c)
	if ok {
		return "1"
	}
	return "."
}

// Policy builders, to keep the scenario table readable.

func policy(ns, name string, sel map[string]string, types ...networkingv1.PolicyType) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}, PolicyTypes: types},
	}
}

func withIngress(p *networkingv1.NetworkPolicy, rules ...networkingv1.NetworkPolicyIngressRule) *networkingv1.NetworkPolicy {
	p.Spec.Ingress = append(p.Spec.Ingress, rules...)
	return p
}

func withEgress(p *networkingv1.NetworkPolicy, rules ...networkingv1.NetworkPolicyEgressRule) *networkingv1.NetworkPolicy {
	p.Spec.Egress = append(p.Spec.Egress, rules...)
	return p
}

func from(peers ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyIngressRule {
	return networkingv1.NetworkPolicyIngressRule{From: peers}
}

func to(peers ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyEgressRule {
	return networkingv1.NetworkPolicyEgressRule{To: peers}
}

func sel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func pods(kv ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: sel(kv...)}
}

func namespaces(kv ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: sel(kv...)}
}

func cidr(c string, except ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c, Except: except}}
}

func port(proto corev1.Protocol, p intstr.IntOrString, end ...int32) networkingv1.NetworkPolicyPort {
	np := networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &p}
	if len(end) > 0 {
		np.EndPort = &end[0]
	}
	return np
}

func onPorts(r networkingv1.NetworkPolicyIngressRule, ports ...networkingv1.NetworkPolicyPort) networkingv1.NetworkPolicyIngressRule {
	r.Ports = ports
	return r
}

func onEgressPorts(r networkingv1.NetworkPolicyEgressRule, ports ...networkingv1.NetworkPolicyPort) networkingv1.NetworkPolicyEgressRule {
	r.Ports = ports
	return r
}

var _ = testing.Verbose
