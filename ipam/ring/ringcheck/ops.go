package ringcheck

import (
	"fmt"
	"slices"
	"sort"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

// index returns the entry whose range holds a (the last one when a lies
// before the first token).
func (r Ring) index(a address.Address) int {
	i := sort.Search(len(r.Entries), func(k int) bool { return r.Entries[k].Token > a })
	if i == 0 {
		return len(r.Entries) - 1
	}
	return i - 1
}

func (r *Ring) insert(e Entry) {
	i := sort.Search(len(r.Entries), func(k int) bool { return r.Entries[k].Token >= e.Token })
	r.Entries = slices.Insert(r.Entries, i, e)
}

func (r Ring) tokenAt(a address.Address) int {
	i := sort.Search(len(r.Entries), func(k int) bool { return r.Entries[k].Token >= a })
	if i < len(r.Entries) && r.Entries[i].Token == a {
		return i
	}
	return -1
}

// Grant gives [start, end) of our space to peer as a 2.8.1 router does:
// a token at start changes owner (version + 1) or is inserted, the entry
// it splits gets version + 1 and a free count of its new size, tokens of
// ours inside the range change owner (version + 1), and a token of ours is
// inserted at end unless one is there. Every free count is provisional
// until the next ReportFree.
func (r *Ring) Grant(start, end address.Address, peer mesh.PeerName) error {
	if len(r.Entries) == 0 || start >= end || start < r.Start || end > r.End {
		return fmt.Errorf("grant %s-%s: bad range for %s", start, end, r)
	}
	p := r.index(start)
	for k := p; k < len(r.Entries) && (k == p || r.Entries[k].Token < end); k++ {
		if r.Entries[k].Peer != r.Peer {
			return fmt.Errorf("grant %s-%s: token %s is not ours", start, end, r.Entries[k].Token)
		}
	}
	startFree := min(r.distance(start, r.next(r.Entries, p)), r.distance(start, end))
	if r.Entries[p].Token == start {
		r.update(p, peer, startFree)
	} else {
		r.update(p, r.Peer, r.distance(r.Entries[p].Token, start))
		r.insert(Entry{Token: start, Peer: peer, Free: startFree})
		p = r.tokenAt(start)
	}
	k := p + 1
	for ; k < len(r.Entries) && r.Entries[k].Token < end; k++ {
		r.update(k, peer, min(r.Entries[k].Free, r.distance(r.Entries[k].Token, end)))
	}
	tail := end
	if tail == r.End {
		tail = r.Start
	}
	if r.tokenAt(tail) < 0 {
		r.insert(Entry{Token: tail, Peer: r.Peer, Free: r.distance(tail, r.Entries[k%len(r.Entries)].Token)})
	}
	return nil
}

func (r *Ring) update(i int, peer mesh.PeerName, free address.Count) {
	e := &r.Entries[i]
	e.Peer, e.Free = peer, free
	e.Version++
}

// ReportFree sets the free count of each of our tokens from freeIn,
// bumping the version of every token whose count changed.
func (r *Ring) ReportFree(freeIn func(address.Range) address.Count) {
	for i := range r.Entries {
		e := &r.Entries[i]
		if e.Peer != r.Peer {
			continue
		}
		var n address.Count
		for _, x := range r.Ranges(e.Token, r.next(r.Entries, i)) {
			n += freeIn(x)
		}
		if n != e.Free {
			e.Free = n
			e.Version++
		}
	}
}

// Transfer gives every token of from to to, with version + 100.
func (r *Ring) Transfer(from, to mesh.PeerName) {
	for i := range r.Entries {
		if e := &r.Entries[i]; e.Peer == from {
			e.Peer = to
			e.Version += 100
		}
	}
}

// OwnedRanges returns the ranges of peer's tokens.
func (r Ring) OwnedRanges(peer mesh.PeerName) []address.Range {
	var out []address.Range
	for i, e := range r.Entries {
		if e.Peer == peer {
			out = append(out, r.Ranges(e.Token, r.next(r.Entries, i))...)
		}
	}
	return out
}
