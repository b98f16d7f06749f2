package ring

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/seedf75a49c6/weave/ipam/ring/ringcheck"
	"github.com/weaveworks/mesh"
)

// simPeer is one router of a mixed mesh: ours (a *Ring) or a 2.8.1 peer
// (the ringcheck model, which merges by 2.8.1's rules strictly).
type simPeer struct {
	name  mesh.PeerName
	ours  *Ring
	weave ringcheck.Ring
	alloc map[address.Address]bool
	past  []ringcheck.Ring // every replica it gossiped, for stale delivery
	dead  bool
}

func (p *simPeer) view() ringcheck.Ring {
	if p.ours != nil {
		return toCheck(p.ours)
	}
	return p.weave.Clone()
}

func (p *simPeer) freeIn(r address.Range) address.Count {
	n := address.Count(r.Size())
	for a := range p.alloc {
		if r.Contains(a) {
			n--
		}
	}
	return n
}

func (p *simPeer) reportFree() {
	if p.ours != nil {
		p.ours.ReportFree(p.freeIn)
	} else {
		p.weave.ReportFree(p.freeIn)
	}
	p.past = append(p.past, p.view())
}

func (p *simPeer) owned() []address.Range {
	if p.ours != nil {
		return p.ours.OwnedRanges()
	}
	return p.weave.OwnedRanges(p.name)
}

// mixedMesh simulates peers gossiping rings in random order, with stale
// copies, donations, releases, rmpeer and reset.
type mixedMesh struct {
	t     *testing.T
	rnd   *rand.Rand
	peers []*simPeer
	seeds []mesh.PeerName
	hist  ringcheck.History
	log   []string
}

func newMixedMesh(t *testing.T, seed uint64, n int, weave func(int) bool) *mixedMesh {
	m := &mixedMesh{t: t, rnd: rand.New(rand.NewPCG(seed, 7))}
	for i := 1; i <= n; i++ {
		m.seeds = append(m.seeds, mesh.PeerName(i))
	}
	for i := 1; i <= n; i++ {
		r := New(smallStart, smallStart+256, mesh.PeerName(i))
		if err := r.ClaimForPeers(m.seeds); err != nil {
			t.Fatal(err)
		}
		p := &simPeer{name: mesh.PeerName(i), alloc: map[address.Address]bool{}}
		if weave(i) {
			p.weave = toCheck(r)
		} else {
			p.ours = r
		}
		p.reportFree()
		m.peers = append(m.peers, p)
	}
	return m
}

func (m *mixedMesh) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("%s\nafter:\n  %s", fmt.Sprintf(format, args...), strings.Join(m.log, "\n  "))
}

func (m *mixedMesh) alive() []*simPeer {
	var out []*simPeer
	for _, p := range m.peers {
		if !p.dead {
			out = append(out, p)
		}
	}
	return out
}

// deliver merges ring r (gossiped by src) into dst.
func (m *mixedMesh) deliver(dst *simPeer, r ringcheck.Ring) {
	if dst.dead {
		return
	}
	if dst.ours != nil {
		if _, err := dst.ours.Merge(fromCheck(r, m.seeds)); err != nil {
			m.fail("our peer %s refuses %s: %v\nholding %s", dst.name, r, err, dst.ours)
		}
	} else {
		used := func(rs []address.Range) bool {
			for _, x := range rs {
				if dst.freeIn(x) < address.Count(x.Size()) {
					return true
				}
			}
			return false
		}
		got, err := ringcheck.Merge(dst.weave, r, used)
		if err != nil {
			m.fail("2.8.1 peer %s refuses %s: %v\nholding %s", dst.name, r, err, dst.weave)
		}
		dst.weave = got
	}
	dst.reportFree()
}

// entryRanges lists the range of each token p owns, one per token.
func (p *simPeer) entryRanges() []address.Range {
	v := p.view()
	var out []address.Range
	for i, e := range v.Entries {
		if e.Peer == p.name {
			out = append(out, v.Ranges(e.Token, v.Entries[(i+1)%len(v.Entries)].Token)...)
		}
	}
	return out
}

// freeRun returns the longest run of unallocated addresses inside one of
// p's tokens.
func (p *simPeer) freeRun() (best address.Range) {
	for _, x := range p.entryRanges() {
		start := x.Start
		for a := x.Start; a <= x.End; a++ {
			if a == x.End || p.alloc[a] {
				if a-start > best.End-best.Start {
					best = address.Range{Start: start, End: a}
				}
				start = a + 1
			}
		}
	}
	return best
}

func (m *mixedMesh) allocate(p *simPeer) {
	for _, x := range p.owned() {
		for a := x.Start; a < x.End; a++ {
			if !p.alloc[a] {
				p.alloc[a] = true
				m.log = append(m.log, fmt.Sprintf("%s allocates %s", p.name, a))
				p.reportFree()
				return
			}
		}
	}
	if ds := m.alive(); len(ds) > 1 {
		if d := ds[m.rnd.IntN(len(ds))]; d != p {
			m.donate(d, p)
		}
	}
}

// donate has d give p the upper half of its longest free run, as a
// space request is answered, and unicast its ring to p.
func (m *mixedMesh) donate(d, p *simPeer) {
	run := d.freeRun()
	if run.Size() == 0 {
		return
	}
	g := address.Range{Start: run.End - address.Address(max(1, run.Size()/2)), End: run.End}
	m.log = append(m.log, fmt.Sprintf("%s grants %s to %s", d.name, g, p.name))
	var err error
	if d.ours != nil {
		err = d.ours.GrantRangeToHost(g.Start, g.End, p.name)
	} else {
		err = d.weave.Grant(g.Start, g.End, p.name)
	}
	if err != nil {
		m.fail("%s grants %s: %v", d.name, g, err)
	}
	d.reportFree()
	m.deliver(p, d.view())
}

// claim has p ask owner d for one free address of d's, as a claim of an
// address another peer owns does: d grants that single address.
func (m *mixedMesh) claim(d, p *simPeer) {
	var free []address.Address
	for _, x := range d.entryRanges() {
		for a := x.Start; a < x.End; a++ {
			if !d.alloc[a] {
				free = append(free, a)
			}
		}
	}
	if len(free) == 0 {
		return
	}
	a := free[m.rnd.IntN(len(free))]
	m.log = append(m.log, fmt.Sprintf("%s claims %s from %s", p.name, a, d.name))
	var err error
	if d.ours != nil {
		err = d.ours.GrantRangeToHost(a, a+1, p.name)
	} else {
		err = d.weave.Grant(a, a+1, p.name)
	}
	if err != nil {
		m.fail("%s grants claimed %s: %v", d.name, a, err)
	}
	d.reportFree()
	m.deliver(p, d.view())
	p.alloc[a] = true
	p.reportFree()
}

func (m *mixedMesh) release(p *simPeer) {
	for a := range p.alloc {
		delete(p.alloc, a)
		m.log = append(m.log, fmt.Sprintf("%s releases %s", p.name, a))
		p.reportFree()
		return
	}
}

// retire has p leave: its last state reaches everyone, then it stops;
// with reset its space goes to an heir, else a survivor runs rmpeer.
func (m *mixedMesh) retire(p *simPeer, reset bool) {
	others := slices.DeleteFunc(m.alive(), func(q *simPeer) bool { return q == p })
	if len(others) < 2 {
		return
	}
	heir := others[m.rnd.IntN(len(others))]
	if reset {
		m.log = append(m.log, fmt.Sprintf("%s resets, handing over to %s", p.name, heir.name))
		transfer(p, p.name, heir.name)
	}
	for _, q := range others {
		m.deliver(q, p.view())
	}
	p.dead, p.alloc = true, nil
	if !reset {
		m.log = append(m.log, fmt.Sprintf("%s dies; %s runs rmpeer", p.name, heir.name))
		transfer(heir, p.name, heir.name)
		heir.reportFree()
	}
}

func transfer(p *simPeer, from, to mesh.PeerName) {
	if p.ours != nil {
		p.ours.Transfer(from, to)
	} else {
		p.weave.Transfer(from, to)
	}
	p.past = append(p.past, p.view())
}

func (m *mixedMesh) step() {
	ps := m.alive()
	p, q := ps[m.rnd.IntN(len(ps))], ps[m.rnd.IntN(len(ps))]
	switch k := m.rnd.IntN(100); {
	case k < 30:
		m.allocate(p)
	case k < 40:
		m.release(p)
	case k < 50:
		if p != q {
			m.donate(p, q)
		}
	case k < 55:
		if p != q {
			m.claim(p, q)
		}
	case k < 80:
		m.deliver(q, p.view())
	case k < 98:
		m.deliver(q, p.past[m.rnd.IntN(len(p.past))]) // a stale copy
	default:
		m.retire(p, k == 99)
	}
	m.check()
}

// check: every replica passes 2.8.1's invariants, no token version has two
// contents, and no address is held twice or outside its holder's space.
func (m *mixedMesh) check() {
	holder := map[address.Address]mesh.PeerName{}
	for _, p := range m.alive() {
		v := p.view()
		if err := v.Check(); err != nil {
			m.fail("replica of %s: %v\n%s", p.name, err, v)
		}
		if err := m.hist.Observe(v); err != nil {
			m.fail("%v", err)
		}
		for a := range p.alloc {
			if h, ok := holder[a]; ok {
				m.fail("%s allocated by %s and %s", a, h, p.name)
			}
			holder[a] = p.name
			if !slices.ContainsFunc(p.owned(), func(x address.Range) bool { return x.Contains(a) }) {
				m.fail("%s holds %s outside its space: %s", p.name, a, v)
			}
		}
	}
}

// converge gossips all pairs until quiet and requires one ring.
func (m *mixedMesh) converge() {
	for round := 0; round < 3; round++ {
		for _, p := range m.alive() {
			for _, q := range m.alive() {
				m.deliver(q, p.view())
			}
		}
	}
	ps := m.alive()
	for _, p := range ps[1:] {
		a, b := ps[0].view(), p.view()
		if !slices.Equal(a.Entries, b.Entries) {
			m.fail("replicas differ after gossip:\n%s\n%s", a, b)
		}
	}
}

// TestMixedMeshRandomOperations drives random grants, claims (one-address
// grants), allocations, releases, fresh and stale gossip, rmpeer and reset
// across five peers,
// two of them 2.8.1 peers applying its merge rules strictly. Any refused
// merge, any token version with two contents, any address held twice or
// outside its holder's space, or replicas that do not converge fail it.
func TestMixedMeshRandomOperations(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 30
	}
	grants := 0
	for seed := range uint64(seeds) {
		m := newMixedMesh(t, seed, 5, func(i int) bool { return i == 2 || i == 5 })
		for range 300 {
			m.step()
		}
		m.converge()
		for _, l := range m.log {
			if strings.Contains(l, " grants ") || strings.Contains(l, " claims ") {
				grants++
			}
		}
	}
	if grants < seeds {
		t.Fatalf("only %d grants in %d runs: the test does not exercise donation", grants, seeds)
	}
	t.Logf("%d runs, %d grants", seeds, grants)
}
