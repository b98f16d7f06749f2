//go:build linux

package nft

import (
	"fmt"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"

	"github.com/seedf75a49c6/weave/npc"
)

// DefaultTable is the name of our table (family inet).
const DefaultTable = "weave-npc"

// Names of the fixed chains and sets of the table.
const (
	chainForward = "forward"
	chainInput   = "input"
	chainPods    = "pods"
	chainIngress = "ingress"
	chainEgress  = "egress"
	chainBlocked = "blocked"
	setBlocked   = "blocked"
	setPortProto = "port-protocols"
)

// Mark is the packet mark bit ORed into every new connection the table
// lets through; the router's guard (internal/netdev, weaver --expect-npc)
// drops new bridged connections without it. Equal to netdev.NPCMark (a
// test checks); not imported from there so weave-npc links no router code.
const Mark uint32 = 0x40000

// LogPrefix starts the kernel log line of every blocked connection.
const LogPrefix = "weave-npc blocked: "

// builder assembles one full table into a connection's pending batch.
type builder struct {
	c      *nftables.Conn
	t      *nftables.Table
	bridge string
	mcast  bool
	sets   map[string]*nftables.Set
	chains map[string]*nftables.Chain
	rules  int
}

// build queues "add table; delete table; add table ..." so that the batch
// replaces whatever table exists with the model's, atomically.
func build(c *nftables.Conn, cfg Config, m *npc.Model) (*builder, error) {
	name, bridge := cfg.Table, cfg.Bridge
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: name}
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	b := &builder{c: c, t: t, bridge: bridge, mcast: cfg.AllowMulticast, sets: map[string]*nftables.Set{}, chains: map[string]*nftables.Chain{}}
	if err := b.fixedSets(); err != nil {
		return nil, err
	}
	for _, s := range m.Sets {
		set, elems := nftSet(t, s)
		if err := c.AddSet(set, elems); err != nil {
			return nil, fmt.Errorf("add set %s: %w", s.Name, err)
		}
		b.sets[s.Name] = set
	}
	b.addChains()
	if err := b.addRules(m); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *builder) fixedSets() error {
	blocked := &nftables.Set{Table: b.t, Name: setBlocked, KeyType: portKey, Concatenation: true, Dynamic: true, Counter: true,
		Comment: "new connections dropped, by protocol . destination port (0 for protocols without ports)"}
	if err := b.c.AddSet(blocked, nil); err != nil {
		return fmt.Errorf("add set %s: %w", setBlocked, err)
	}
	protos := &nftables.Set{Table: b.t, Name: setPortProto, KeyType: nftables.TypeInetProto, Constant: true}
	var elems []nftables.SetElement
	for _, p := range []npc.Proto{npc.TCP, npc.UDP, npc.SCTP} {
		elems = append(elems, nftables.SetElement{Key: []byte{byte(p)}})
	}
	if err := b.c.AddSet(protos, elems); err != nil {
		return fmt.Errorf("add set %s: %w", setPortProto, err)
	}
	b.sets[setBlocked], b.sets[setPortProto] = blocked, protos
	return nil
}

func (b *builder) addChains() {
	accept := nftables.ChainPolicyAccept
	b.chains[chainForward] = b.c.AddChain(&nftables.Chain{Name: chainForward, Table: b.t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	b.chains[chainInput] = b.c.AddChain(&nftables.Chain{Name: chainInput, Table: b.t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	for _, n := range []string{chainPods, chainIngress, chainEgress, chainBlocked} {
		b.chains[n] = b.c.AddChain(&nftables.Chain{Name: n, Table: b.t})
	}
}

func (b *builder) add(chain, comment string, exprs ...[]expr.Any) {
	var all []expr.Any
	for _, e := range exprs {
		all = append(all, e...)
	}
	r := &nftables.Rule{Table: b.t, Chain: b.chains[chain], Exprs: all}
	if comment != "" {
		r.UserData = userdata.AppendString(nil, userdata.TypeComment, truncate(comment, 120))
	}
	b.c.AddRule(r)
	b.rules++
}

func (b *builder) addRules(m *npc.Model) error {
	one := func(e ...expr.Any) []expr.Any { return e }
	b.add(chainForward, "", ifIs(expr.MetaKeyIIFNAME, b.bridge), one(verdict(expr.VerdictGoto, chainPods)))
	b.add(chainForward, "", ifIs(expr.MetaKeyOIFNAME, b.bridge), one(verdict(expr.VerdictGoto, chainPods)))
	// A pod's connections to its own node's addresses (the bridge's, eth0's)
	// end in the input hook: egress policy applies to them as to any other.
	b.add(chainInput, "pods to this node", ifIs(expr.MetaKeyIIFNAME, b.bridge), one(verdict(expr.VerdictGoto, chainPods)))
	b.add(chainPods, "replies of allowed connections", ctEstablished(), one(accept()))
	b.add(chainPods, "pods are IPv4 only", notIPv4(), setMark(Mark), one(accept()))
	if b.mcast {
		b.add(chainPods, "multicast is outside policy (--allow-mcast)", multicastDst(), setMark(Mark), one(accept()))
	}
	b.add(chainPods, "", ifIs(expr.MetaKeyIIFNAME, b.bridge), addrIn(saddr, b.sets[npc.SetEgressIsolated]), one(verdict(expr.VerdictJump, chainEgress)))
	b.add(chainPods, "", ifIs(expr.MetaKeyOIFNAME, b.bridge), addrIn(daddr, b.sets[npc.SetIngressIsolated]), one(verdict(expr.VerdictJump, chainIngress)))
	b.add(chainPods, "allowed", setMark(Mark), one(accept()))
	for _, r := range m.Rules {
		if err := b.policyRule(r); err != nil {
			return err
		}
	}
	b.add(chainIngress, "no policy allows it", one(verdict(expr.VerdictJump, chainBlocked)))
	b.add(chainEgress, "no policy allows it", one(verdict(expr.VerdictJump, chainBlocked)))
	b.blockedRules()
	return nil
}

// policyRule adds one model rule to its direction's chain; a match returns
// to the pods chain, which goes on to the next check.
func (b *builder) policyRule(r npc.Rule) error {
	target, peer, chain := uint32(daddr), uint32(saddr), chainIngress
	if r.Dir == npc.Egress {
		target, peer, chain = saddr, daddr, chainEgress
	}
	var parts [][]expr.Any
	for _, ref := range []struct {
		name string
		expr func(*nftables.Set) []expr.Any
	}{
		{r.Targets, func(s *nftables.Set) []expr.Any { return addrIn(target, s) }},
		{r.Peers, func(s *nftables.Set) []expr.Any { return addrIn(peer, s) }},
		{r.Ports, portIn},
		{r.Named, namedIn},
	} {
		if ref.name == "" {
			continue
		}
		s, ok := b.sets[ref.name]
		if !ok {
			return fmt.Errorf("rule %s: set %s missing from model", r.Comment, ref.name)
		}
		parts = append(parts, ref.expr(s))
	}
	parts = append(parts, []expr.Any{verdict(expr.VerdictReturn, "")})
	b.add(chain, r.Comment, parts...)
	return nil
}

// blockedRules count the connection by protocol and port, log it (at most
// 10 a second, the rest only counted) and drop it.
func (b *builder) blockedRules() {
	blocked, protos := b.sets[setBlocked], b.sets[setPortProto]
	update := &expr.Dynset{SrcRegKey: reg32_0, SetName: blocked.Name, SetID: blocked.ID,
		Operation: uint32(unix.NFT_DYNSET_OP_UPDATE), Exprs: []expr.Any{&expr.Counter{}}}
	l4 := &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1}
	b.add(chainBlocked, "", []expr.Any{l4, &expr.Lookup{SourceRegister: reg1, SetName: protos.Name, SetID: protos.ID}},
		l4protoDport(reg32_0), []expr.Any{update})
	b.add(chainBlocked, "", []expr.Any{l4, &expr.Lookup{SourceRegister: reg1, SetName: protos.Name, SetID: protos.ID, Invert: true},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg32_0},
		&expr.Immediate{Register: reg32_1, Data: []byte{0, 0}}, update})
	b.add(chainBlocked, "", []expr.Any{
		&expr.Limit{Type: expr.LimitTypePkts, Rate: 10, Unit: expr.LimitTimeSecond, Burst: 20},
		&expr.Log{Key: 1 << unix.NFTA_LOG_PREFIX, Data: []byte(LogPrefix)},
	})
	b.add(chainBlocked, "", []expr.Any{&expr.Counter{}, verdict(expr.VerdictDrop, "")})
}

var _ = time.Second
