package ringcheck

import (
	"fmt"

	"github.com/seedf75a49c6/weave/ipam/address"
)

// HasAllocations reports whether the receiving peer holds allocated
// addresses in any of the ranges.
type HasAllocations func([]address.Range) bool

// NoAllocations is the HasAllocations of a peer that allocated nothing.
func NoAllocations([]address.Range) bool { return false }

// Merge folds incoming into r the way a 2.8.1 router does and returns the
// resulting replica, or the error for which 2.8.1 refuses the whole update
// (and drops the connection it came over).
//
// Same token: the higher version wins; at equal versions an entry with
// the same owner counts as equal whatever its free count (ours is kept),
// a different owner of a token we use is an error, and otherwise the
// larger free count wins (ours on a tie). A newer version of a token we
// own is accepted only when it names another owner and we hold nothing
// there, or names us (we then re-assert ours at their version + 1). A
// token only the incoming ring has must not split a range we own and use;
// after our last token, any foreign token splitting ours is refused. Our
// own entries' free counts are then clamped (2.8.1 does not bump their
// versions for that) and the result must pass Check.
func Merge(r, in Ring, used HasAllocations) (Ring, error) {
	if in.Start != r.Start || in.End != r.End {
		return r, fmt.Errorf("incoming ring %s-%s into %s-%s: %w", in.Start, in.End, r.Start, r.End, ErrRange)
	}
	if err := in.Check(); err != nil {
		return r, fmt.Errorf("incoming ring from %s: %w", in.Peer, err)
	}
	m := merger{r: r, in: in, used: used}
	if err := m.walk(); err != nil {
		return r, fmt.Errorf("merge ring from %s into %s: %w", in.Peer, r.Peer, err)
	}
	for i := range m.out {
		if e := &m.out[i]; e.Peer == r.Peer {
			e.Free = min(e.Free, r.distance(e.Token, r.next(m.out, i)))
		}
	}
	if err := r.checkEntries(m.out); err != nil {
		return r, fmt.Errorf("merge of incoming data from %s into %s causes: %w", in.Peer, r.Peer, err)
	}
	out := r
	out.Entries = m.out
	return out, nil
}

type merger struct {
	r, in Ring
	used  HasAllocations
	out   []Entry
	// prevOurs: the entry added last came from our replica and is ours.
	prevOurs bool
}

func (m *merger) mine(e Entry) {
	m.out = append(m.out, e)
	m.prevOurs = e.Peer == m.r.Peer
}

func (m *merger) theirs(e Entry) {
	m.out = append(m.out, e)
	m.prevOurs = false
}

func (m *merger) walk() error {
	mine, theirs := m.r.Entries, m.in.Entries
	i, j := 0, 0
	for i < len(mine) && j < len(theirs) {
		a, b := mine[i], theirs[j]
		switch {
		case a.Token < b.Token:
			m.mine(a)
			i++
		case a.Token > b.Token:
			if m.prevOurs && b.Peer != m.r.Peer && m.used(m.r.Ranges(b.Token, a.Token)) {
				return fmt.Errorf("%w: %s claims %s", ErrInMyRange, b.Peer, b.Token)
			}
			m.theirs(b)
			j++
		default:
			if err := m.same(a, b, m.r.Ranges(a.Token, m.r.next(mine, i))); err != nil {
				return err
			}
			i++
			j++
		}
	}
	for ; i < len(mine); i++ {
		m.mine(mine[i])
	}
	for ; j < len(theirs); j++ {
		if b := theirs[j]; m.prevOurs && b.Peer != m.r.Peer {
			return fmt.Errorf("%w: %s claims %s after our last token", ErrInMyRange, b.Peer, b.Token)
		}
		m.theirs(theirs[j])
	}
	return nil
}

// same merges two versions of one token; rs is the range ours covers.
func (m *merger) same(a, b Entry, rs []address.Range) error {
	ours := a.Peer == m.r.Peer
	switch {
	case a.Version > b.Version || (a.Version == b.Version && a.Peer == b.Peer):
		m.mine(a)
	case a.Version == b.Version:
		if ours && m.used(rs) {
			return fmt.Errorf("%w: %s at v%d is ours, incoming says %s", ErrInconsistent, a.Token, a.Version, b.Peer)
		}
		if a.Free >= b.Free {
			m.mine(a)
		} else {
			m.theirs(b)
		}
	case !ours:
		m.theirs(b)
	case b.Peer == m.r.Peer:
		a.Version = b.Version + 1
		m.mine(a)
	case !m.used(rs):
		m.theirs(b)
	default:
		return fmt.Errorf("%w: %s v%d ours, incoming says %s v%d", ErrNewerVersion, a.Token, a.Version, b.Peer, b.Version)
	}
	return nil
}
