// Package ringcheck is a test-only model of the IPAM ring rules Weave Net
// 2.8.1 applies, written from the published description of its behaviour:
// how a 2.8.1 router checks and merges a ring it receives, and how it
// versions its own grants, free reports and transfers. Tests replay every
// ring our routers produce through it, so an update a 2.8.1 peer would
// refuse (and drop the connection over) fails a test instead of a
// migration. Nothing outside tests imports it.
package ringcheck

import (
	"errors"
	"fmt"
	"slices"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

// Entry is one ring token as gossiped (2.8.1's entry fields).
type Entry struct {
	Token   address.Address
	Peer    mesh.PeerName
	Version uint32
	Free    address.Count
}

// Ring is one replica: the universe [Start, End), its owner Peer, and
// the tokens sorted by Token.
type Ring struct {
	Start, End address.Address
	Peer       mesh.PeerName
	Entries    []Entry
}

// Errors of Check and Merge, matched with errors.Is.
var (
	ErrInvalid      = errors.New("invalid ring")
	ErrInMyRange    = errors.New("incoming token splits a range we own and use")
	ErrNewerVersion = errors.New("incoming newer version of a token we own and use")
	ErrInconsistent = errors.New("same version, different content on a token we own and use")
	ErrRange        = errors.New("incoming ring has another universe")
)

// Clone returns a deep copy.
func (r Ring) Clone() Ring {
	r.Entries = slices.Clone(r.Entries)
	return r
}

// next returns the token following entry i, wrapping to the first.
func (r Ring) next(es []Entry, i int) address.Address {
	return es[(i+1)%len(es)].Token
}

// distance is the number of addresses from a up to b around the ring
// (the whole universe when a == b).
func (r Ring) distance(a, b address.Address) address.Count {
	if b > a {
		return address.Count(b - a)
	}
	return address.Count((r.End - a) + (b - r.Start))
}

// Size returns the number of addresses entry i owns.
func (r Ring) Size(i int) address.Count { return r.distance(r.Entries[i].Token, r.next(r.Entries, i)) }

// Check applies 2.8.1's invariants: tokens sorted, unique, inside the
// universe, and no entry reporting more free addresses than it owns.
func (r Ring) Check() error { return r.checkEntries(r.Entries) }

func (r Ring) checkEntries(es []Entry) error {
	for i, e := range es {
		if e.Token < r.Start || e.Token >= r.End {
			return fmt.Errorf("%w: token %s outside %s-%s", ErrInvalid, e.Token, r.Start, r.End)
		}
		if i > 0 && es[i-1].Token >= e.Token {
			return fmt.Errorf("%w: token %s not sorted or repeated", ErrInvalid, e.Token)
		}
	}
	for i, e := range es {
		nxt := r.next(es, i)
		if d := r.distance(e.Token, nxt); e.Free > d {
			return fmt.Errorf("%w: entry %s-%s reporting too much free space: %d > %d", ErrInvalid, e.Token, nxt, e.Free, d)
		}
	}
	return nil
}

// Ranges returns the address ranges from a up to b, split where they
// wrap around the end of the universe.
func (r Ring) Ranges(a, b address.Address) []address.Range {
	if b > a {
		return []address.Range{{Start: a, End: b}}
	}
	out := []address.Range{{Start: a, End: r.End}}
	if b > r.Start {
		out = append(out, address.Range{Start: r.Start, End: b})
	}
	return out
}

// String lists the tokens, for failure messages.
func (r Ring) String() string {
	s := fmt.Sprintf("ring %s-%s of %s:", r.Start, r.End, r.Peer)
	for _, e := range r.Entries {
		s += fmt.Sprintf(" %s->%s(v%d,free %d)", e.Token, e.Peer, e.Version, e.Free)
	}
	return s
}
