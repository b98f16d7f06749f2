package npc

import (
	"cmp"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Pod is what translation needs of a pod.
type Pod struct {
	Namespace, Name string
	Labels          map[string]string
	IP              netip.Addr // IPv4; pods without one are left out
	Local           bool       // runs on this node: policies selecting it are enforced here
	Ports           []ContainerPort
}

// ContainerPort is a declared container port; named ones resolve policy
// ports given by name.
type ContainerPort struct {
	Name  string
	Proto Proto
	Port  uint16
}

// Namespace is what translation needs of a namespace.
type Namespace struct {
	Name   string
	Labels map[string]string
}

// Input is everything a node's controller knows.
type Input struct {
	Pods       []Pod // every pod of the cluster with an IP (peers may be anywhere)
	Namespaces []Namespace
	Policies   []*networkingv1.NetworkPolicy
}

// translator holds the state of one Translate call.
type translator struct {
	pods     []Pod
	nsLabels map[string]labels.Set
	m        *Model
	isolated [2]map[netip.Addr]bool // by Direction
}

// Translate computes the node's model. It never fails: policy parts that
// cannot be enforced (an IPv6 ipBlock, an unparsable selector) are skipped
// and named in Model.Warnings.
func Translate(in Input) *Model {
	t := &translator{
		nsLabels: map[string]labels.Set{},
		m:        &Model{Sets: map[string]*Set{}},
		isolated: [2]map[netip.Addr]bool{{}, {}},
	}
	for _, ns := range in.Namespaces {
		t.nsLabels[ns.Name] = ns.Labels
	}
	for _, p := range in.Pods {
		if p.IP.Is4() {
			t.pods = append(t.pods, p)
		}
	}
	slices.SortFunc(t.pods, func(a, b Pod) int { return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name)) })
	for _, p := range sortedPolicies(in.Policies) {
		t.policy(p)
	}
	t.isolationSets()
	slices.SortStableFunc(t.m.Rules, func(a, b Rule) int { return cmp.Compare(a.Dir, b.Dir) })
	return t.m
}

func sortedPolicies(list []*networkingv1.NetworkPolicy) []*networkingv1.NetworkPolicy {
	out := slices.Clone(list)
	slices.SortFunc(out, func(a, b *networkingv1.NetworkPolicy) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// policyTypes returns which directions a policy isolates: its policyTypes,
// or by default Ingress plus Egress when it has egress rules.
func policyTypes(p *networkingv1.NetworkPolicy) (ingress, egress bool) {
	if len(p.Spec.PolicyTypes) == 0 {
		return true, len(p.Spec.Egress) > 0
	}
	for _, pt := range p.Spec.PolicyTypes {
		switch pt {
		case networkingv1.PolicyTypeIngress:
			ingress = true
		case networkingv1.PolicyTypeEgress:
			egress = true
		}
	}
	return ingress, egress
}

// policy adds the sets and rules of one policy.
func (t *translator) policy(p *networkingv1.NetworkPolicy) {
	id := p.Namespace + "/" + p.Name
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
	if err != nil {
		t.warn("%s: podSelector: %v; policy not enforced", id, err)
		return
	}
	var targets []Pod
	for _, pod := range t.pods {
		if pod.Local && pod.Namespace == p.Namespace && sel.Matches(labels.Set(pod.Labels)) {
			targets = append(targets, pod)
		}
	}
	tset := t.addrSet("t", "targets of "+p.Namespace+" "+selString(sel), podSpans(targets))
	ingress, egress := policyTypes(p)
	if ingress {
		t.isolate(Ingress, targets)
		for i, r := range p.Spec.Ingress {
			c := fmt.Sprintf("%s ingress[%d]", id, i)
			t.rule(Ingress, c, p.Namespace, tset, targets, r.From, r.Ports)
		}
	}
	if egress {
		t.isolate(Egress, targets)
		for i, r := range p.Spec.Egress {
			c := fmt.Sprintf("%s egress[%d]", id, i)
			t.rule(Egress, c, p.Namespace, tset, targets, r.To, r.Ports)
		}
	}
}

func selString(s labels.Selector) string {
	if s.Empty() {
		return "(all)"
	}
	return s.String()
}

func (t *translator) isolate(d Direction, pods []Pod) {
	for _, p := range pods {
		t.isolated[d][p.IP] = true
	}
}

func (t *translator) isolationSets() {
	for d, name := range map[Direction]string{Ingress: SetIngressIsolated, Egress: SetEgressIsolated} {
		var spans []span
		for a := range t.isolated[d] {
			spans = append(spans, span{v4(a), v4(a)})
		}
		t.m.Sets[name] = &Set{Name: name, Kind: AddrSet, Comment: "local pods isolated for " + d.String(), Addrs: toRanges(spans)}
	}
}

// rule adds the Rules of one ingress or egress rule of a policy.
func (t *translator) rule(d Direction, comment, ns, tset string, targets []Pod, peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort) {
	base := Rule{Dir: d, Comment: comment, Targets: tset}
	if len(peers) > 0 {
		base.Peers = t.peerSet(comment, ns, peers)
	}
	if len(ports) == 0 {
		t.m.Rules = append(t.m.Rules, base)
		return
	}
	numeric, named := t.splitPorts(comment, ports)
	if len(numeric) > 0 {
		r := base
		r.Ports = t.portSet(numeric)
		t.m.Rules = append(t.m.Rules, r)
	}
	if len(named) > 0 {
		r := base
		r.Named = t.namedSet(d, comment, targets, named)
		t.m.Rules = append(t.m.Rules, r)
	}
}

func (t *translator) warn(format string, args ...any) {
	t.m.Warnings = append(t.m.Warnings, fmt.Sprintf(format, args...))
}

// setName derives a stable set name from what the set stands for, so
// policies sharing a selector share the set.
func setName(prefix, definition string) string {
	sum := sha256.Sum256([]byte(definition))
	enc := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])
	return prefix + "-" + strings.ToLower(enc[:12])
}

func (t *translator) addrSet(prefix, definition string, spans []span) string {
	name := setName(prefix, definition)
	if _, ok := t.m.Sets[name]; !ok {
		t.m.Sets[name] = &Set{Name: name, Kind: AddrSet, Comment: definition, Addrs: toRanges(spans)}
	}
	return name
}

func podSpans(pods []Pod) []span {
	out := make([]span, 0, len(pods))
	for _, p := range pods {
		out = append(out, span{v4(p.IP), v4(p.IP)})
	}
	return out
}
