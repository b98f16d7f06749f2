package npc

import (
	"fmt"
	"net/netip"
	"strings"
)

// Proto is an IP protocol number, as a port's protocol.
type Proto uint8

// Protocols a NetworkPolicyPort may name.
const (
	TCP  Proto = 6
	UDP  Proto = 17
	SCTP Proto = 132
)

func (p Proto) String() string {
	switch p {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	case SCTP:
		return "sctp"
	}
	return fmt.Sprintf("proto-%d", uint8(p))
}

// SetKind says what a Set's elements are.
type SetKind int

const (
	// AddrSet holds IPv4 address ranges (single pods, or CIDRs minus excepts).
	AddrSet SetKind = iota
	// PortSet holds protocol + port ranges.
	PortSet
	// AddrPortSet holds exact (address, protocol, port) triples: named ports
	// resolved to the pods that declare them.
	AddrPortSet
)

// AddrRange is an inclusive range of IPv4 addresses.
type AddrRange struct{ First, Last netip.Addr }

// PortRange is an inclusive port range of one protocol.
type PortRange struct {
	Proto       Proto
	First, Last uint16
}

// AddrPort is one resolved named port.
type AddrPort struct {
	Addr  netip.Addr
	Proto Proto
	Port  uint16
}

// Set is a named set the rules refer to.
type Set struct {
	Name      string
	Kind      SetKind
	Comment   string // what the set stands for, for `nft list`
	Addrs     []AddrRange
	Ports     []PortRange
	AddrPorts []AddrPort
}

// Direction is the side of a connection a rule applies to.
type Direction int

const (
	Ingress Direction = iota
	Egress
)

func (d Direction) String() string {
	if d == Egress {
		return "egress"
	}
	return "ingress"
}

// Rule allows connections of its policy's target pods. For Ingress, Targets
// match the destination and Peers the source; for Egress the other way
// round. Empty Peers, Ports and Named mean "any". Ports and Named are never
// both set (a policy rule with both becomes two Rules).
type Rule struct {
	Dir     Direction
	Comment string // namespace/policy and rule index
	Targets string
	Peers   string
	Ports   string
	Named   string
}

// Names of the sets every model has: the local pods isolated per direction.
const (
	SetIngressIsolated = "ingress-isolated"
	SetEgressIsolated  = "egress-isolated"
)

// Model is the enforcement state of one node.
type Model struct {
	Sets     map[string]*Set
	Rules    []Rule   // ingress rules first, then egress, in policy order
	Warnings []string // policy parts that could not be enforced, with the reason
}

// String renders the model as stable text, for golden tests and debugging.
func (m *Model) String() string {
	var b strings.Builder
	for _, name := range sortedKeys(m.Sets) {
		s := m.Sets[name]
		fmt.Fprintf(&b, "set %s { %s }\n", name, s.elements())
	}
	for _, r := range m.Rules {
		fmt.Fprintf(&b, "%s %s", r.Dir, r.Targets)
		for _, kv := range [][2]string{{"peers", r.Peers}, {"ports", r.Ports}, {"named", r.Named}} {
			if kv[1] != "" {
				fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
			}
		}
		fmt.Fprintf(&b, " # %s\n", r.Comment)
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

// elements renders a set's elements, comma separated.
func (s *Set) elements() string {
	var out []string
	for _, r := range s.Addrs {
		if r.First == r.Last {
			out = append(out, r.First.String())
		} else {
			out = append(out, r.First.String()+"-"+r.Last.String())
		}
	}
	for _, p := range s.Ports {
		if p.First == p.Last {
			out = append(out, fmt.Sprintf("%s/%d", p.Proto, p.First))
		} else {
			out = append(out, fmt.Sprintf("%s/%d-%d", p.Proto, p.First, p.Last))
		}
	}
	for _, ap := range s.AddrPorts {
		out = append(out, fmt.Sprintf("%s:%s/%d", ap.Addr, ap.Proto, ap.Port))
	}
	return strings.Join(out, ", ")
}

// Len is the number of elements in the set.
func (s *Set) Len() int { return len(s.Addrs) + len(s.Ports) + len(s.AddrPorts) }
