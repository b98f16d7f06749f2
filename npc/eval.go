package npc

import "net/netip"

// Conn is a new connection as the forward hook of a node sees it.
type Conn struct {
	Src, Dst netip.Addr
	Proto    Proto
	Port     uint16 // destination port
}

// Allows interprets the model the way npc/nft's table does: the sender's
// egress rules apply when it is isolated for egress here, then the
// receiver's ingress rules when it is isolated for ingress here.
func (m *Model) Allows(c Conn) bool {
	if m.inSet(SetEgressIsolated, c.Src) && !m.anyRule(Egress, c) {
		return false
	}
	if m.inSet(SetIngressIsolated, c.Dst) && !m.anyRule(Ingress, c) {
		return false
	}
	return true
}

func (m *Model) anyRule(d Direction, c Conn) bool {
	target, peer := c.Dst, c.Src
	if d == Egress {
		target, peer = c.Src, c.Dst
	}
	for _, r := range m.Rules {
		if r.Dir != d || !m.inSet(r.Targets, target) {
			continue
		}
		if r.Peers != "" && !m.inSet(r.Peers, peer) {
			continue
		}
		if r.Ports != "" && !m.portIn(r.Ports, c) {
			continue
		}
		if r.Named != "" && !m.namedIn(r.Named, c) {
			continue
		}
		return true
	}
	return false
}

func (m *Model) inSet(name string, a netip.Addr) bool {
	s := m.Sets[name]
	return s != nil && a.Is4() && containsAddr(s.Addrs, a)
}

func (m *Model) portIn(name string, c Conn) bool {
	for _, p := range m.Sets[name].Ports {
		if p.Proto == c.Proto && c.Port >= p.First && c.Port <= p.Last {
			return true
		}
	}
	return false
}

func (m *Model) namedIn(name string, c Conn) bool {
	for _, ap := range m.Sets[name].AddrPorts {
		if ap == (AddrPort{c.Dst, c.Proto, c.Port}) {
			return true
		}
	}
	return false
}
