package npc

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// peerSet returns the set of every address the peers of one rule allow:
// the selected pods (anywhere in the cluster) and the ipBlocks minus their
// excepts.
func (t *translator) peerSet(comment, ns string, peers []networkingv1.NetworkPolicyPeer) string {
	var spans []span
	var defs []string
	for i, peer := range peers {
		s, def, err := t.peer(ns, peer)
		if err != nil {
			t.warn("%s peer[%d]: %v; peer skipped", comment, i, err)
			continue
		}
		spans = append(spans, s...)
		defs = append(defs, def)
	}
	return t.addrSet("p", "peers "+strings.Join(defs, " | "), spans)
}

// peer resolves one NetworkPolicyPeer; def describes it.
func (t *translator) peer(ns string, p networkingv1.NetworkPolicyPeer) ([]span, string, error) {
	if p.IPBlock != nil {
		return ipBlock(p.IPBlock)
	}
	podSel, nsSel := labels.Everything(), labels.Nothing()
	var err error
	if p.PodSelector != nil {
		if podSel, err = metav1.LabelSelectorAsSelector(p.PodSelector); err != nil {
			return nil, "", fmt.Errorf("podSelector: %w", err)
		}
	}
	if p.NamespaceSelector != nil {
		if nsSel, err = metav1.LabelSelectorAsSelector(p.NamespaceSelector); err != nil {
			return nil, "", fmt.Errorf("namespaceSelector: %w", err)
		}
	}
	var spans []span
	for _, pod := range t.pods {
		inNS := pod.Namespace == ns
		if p.NamespaceSelector != nil {
			inNS = nsSel.Matches(t.nsLabels[pod.Namespace])
		}
		if inNS && podSel.Matches(labels.Set(pod.Labels)) {
			spans = append(spans, span{v4(pod.IP), v4(pod.IP)})
		}
	}
	def := "pods " + selString(podSel)
	if p.NamespaceSelector != nil {
		def += " in namespaces " + selString(nsSel)
	} else {
		def += " in " + ns
	}
	return spans, def, nil
}

// ipBlock returns an ipBlock's CIDR minus its excepts.
func ipBlock(b *networkingv1.IPBlock) ([]span, string, error) {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return nil, "", fmt.Errorf("ipBlock cidr %q: %w", b.CIDR, err)
	}
	if !cidr.Addr().Is4() {
		return nil, "", fmt.Errorf("ipBlock cidr %s: only IPv4 is enforced (pods on weave are IPv4)", cidr)
	}
	spans := []span{prefixSpan(cidr)}
	for _, e := range b.Except {
		ex, err := netip.ParsePrefix(e)
		if err != nil || !ex.Addr().Is4() {
			return nil, "", fmt.Errorf("ipBlock except %q: not an IPv4 CIDR", e)
		}
		spans = subtract(spans, prefixSpan(ex))
	}
	return spans, "ipBlock " + b.CIDR + " except " + strings.Join(b.Except, ","), nil
}

// namedPort is a policy port given by name.
type namedPort struct {
	name  string
	proto Proto
}

// splitPorts separates numeric port ranges (a missing port = every port of
// the protocol) from named ports.
func (t *translator) splitPorts(comment string, ports []networkingv1.NetworkPolicyPort) ([]PortRange, []namedPort) {
	var numeric []PortRange
	var named []namedPort
	for i, p := range ports {
		proto, err := protoOf(p.Protocol)
		if err != nil {
			t.warn("%s port[%d]: %v; port skipped", comment, i, err)
			continue
		}
		switch {
		case p.Port == nil:
			numeric = append(numeric, PortRange{proto, 0, 65535})
		case p.Port.Type == 1: // intstr.String
			named = append(named, namedPort{p.Port.StrVal, proto})
		default:
			first := uint16(p.Port.IntVal)
			last := first
			if p.EndPort != nil && *p.EndPort >= p.Port.IntVal {
				last = uint16(*p.EndPort)
			}
			numeric = append(numeric, PortRange{proto, first, last})
		}
	}
	return numeric, named
}

func protoOf(p *corev1.Protocol) (Proto, error) {
	if p == nil {
		return TCP, nil
	}
	switch *p {
	case corev1.ProtocolTCP:
		return TCP, nil
	case corev1.ProtocolUDP:
		return UDP, nil
	case corev1.ProtocolSCTP:
		return SCTP, nil
	}
	return 0, fmt.Errorf("unknown protocol %q", *p)
}

func (t *translator) portSet(ports []PortRange) string {
	ports = mergePorts(ports)
	s := &Set{Kind: PortSet, Ports: ports}
	s.Comment = "ports " + s.elements()
	s.Name = setName("ports", s.Comment)
	t.m.Sets[s.Name] = s
	return s.Name
}

// namedSet resolves named ports to (pod address, protocol, port): for
// ingress against the policy's target pods (the ports they serve), for
// egress against every pod (the destination's ports).
func (t *translator) namedSet(d Direction, comment string, targets []Pod, named []namedPort) string {
	pods := t.pods
	if d == Ingress {
		pods = targets
	}
	var aps []AddrPort
	for _, pod := range pods {
		for _, cp := range pod.Ports {
			for _, np := range named {
				if cp.Name == np.name && cp.Proto == np.proto {
					aps = append(aps, AddrPort{pod.IP, cp.Proto, cp.Port})
				}
			}
		}
	}
	s := &Set{Kind: AddrPortSet, AddrPorts: sortAddrPorts(aps), Comment: "named ports of " + comment}
	s.Name = setName("named", s.Comment)
	t.m.Sets[s.Name] = s
	return s.Name
}
