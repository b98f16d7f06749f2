package ring

import (
	"errors"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/seedf75a49c6/weave/ipam/ring/ringcheck"
	"github.com/weaveworks/mesh"
)

// toCheck converts a replica to the 2.8.1 model's form.
func toCheck(r *Ring) ringcheck.Ring {
	out := ringcheck.Ring{Start: r.Start, End: r.End, Peer: r.Peer}
	for _, e := range r.Entries {
		out.Entries = append(out.Entries, ringcheck.Entry{Token: e.Token, Peer: e.Peer, Version: e.Version, Free: e.Free})
	}
	return out
}

// fromCheck converts a model replica (a 2.8.1 peer's ring) to ours, as
// our router decodes it from gossip.
func fromCheck(c ringcheck.Ring, seeds []mesh.PeerName) *Ring {
	r := &Ring{Start: c.Start, End: c.End, Peer: c.Peer, Seeds: seeds}
	for _, e := range c.Entries {
		r.Entries = append(r.Entries, &entry{Token: e.Token, Peer: e.Peer, Version: e.Version, Free: e.Free})
	}
	return r
}

// strictAccepts has a 2.8.1 peer that holds before (and allocated
// nothing) merge after, and requires it to end up with exactly after.
func strictAccepts(t *testing.T, what string, holder mesh.PeerName, before, after *Ring) {
	t.Helper()
	held := toCheck(before)
	held.Peer = holder
	got, err := ringcheck.Merge(held, toCheck(after), ringcheck.NoAllocations)
	if err != nil {
		t.Fatalf("%s: a 2.8.1 peer refuses our ring: %v\nheld:     %s\nincoming: %s", what, err, before, after)
	}
	want := toCheck(after)
	for i := range want.Entries {
		if i >= len(got.Entries) || got.Entries[i] != want.Entries[i] {
			t.Fatalf("%s: 2.8.1 peer holds %s\nwant %s", what, got, want)
		}
	}
	if len(got.Entries) != len(want.Entries) {
		t.Fatalf("%s: 2.8.1 peer holds %s\nwant %s", what, got, want)
	}
}

const (
	smallStart = address.Address(0x0a200000) // 10.32.0.0
	smallEnd   = smallStart + 64             // 10.32.0.64
)

// freeExcept reports every address of a range as free except those in used.
func freeExcept(used ...address.Address) func(address.Range) address.Count {
	return func(r address.Range) address.Count {
		n := address.Count(r.Size())
		for _, a := range used {
			if r.Contains(a) {
				n--
			}
		}
		return n
	}
}

// TestDonationWithNothingAllocatedIsVersioned is the mixed-mesh defect:
// our peer (2) owns 10.32.0.32-64 with nothing allocated and gives its
// upper half to a 2.8.1 peer (1), twice. A 2.8.1 peer that held the old
// entry at the same version kept its free count of 32 for an entry now 16
// wide and dropped the connection.
func TestDonationWithNothingAllocatedIsVersioned(t *testing.T) {
	ours := New(smallStart, smallEnd, 2)
	if err := ours.ClaimForPeers([]mesh.PeerName{2, 1}); err != nil {
		t.Fatal(err)
	}
	for _, grant := range []address.Range{{Start: smallStart + 48, End: smallEnd}, {Start: smallStart + 40, End: smallStart + 48}} {
		before := ours.Clone()
		if err := ours.GrantRangeToHost(grant.Start, grant.End, 1); err != nil {
			t.Fatal(err)
		}
		strictAccepts(t, "grant "+grant.String()+" before ReportFree", 1, before, ours)
		mid := ours.Clone()
		ours.ReportFree(freeExcept())
		strictAccepts(t, "grant "+grant.String(), 1, before, ours)
		strictAccepts(t, "free report after grant "+grant.String(), 1, mid, ours)
	}
}

// TestStrictCheckerCatchesUnversionedChange proves the checker fails on
// the old behaviour: shrinking an entry's free count without a version
// bump reproduces 2.8.1's refusal.
func TestStrictCheckerCatchesUnversionedChange(t *testing.T) {
	ours := New(smallStart, smallEnd, 2)
	_ = ours.ClaimForPeers([]mesh.PeerName{2, 1})
	held := toCheck(ours)
	held.Peer = 1
	bad := ours.Clone()
	bad.insert(&entry{Token: smallStart + 48, Peer: 1, Free: 16})
	bad.Entries[1].Free = 16 // as the old code did: no version bump
	_, err := ringcheck.Merge(held, toCheck(bad), ringcheck.NoAllocations)
	if !errors.Is(err, ringcheck.ErrInvalid) || !strings.Contains(err.Error(), "reporting too much free space: 32 > 16") {
		t.Fatalf("unversioned shrink: got %v", err)
	}
	var h ringcheck.History
	if err := h.Observe(toCheck(ours)); err != nil {
		t.Fatal(err)
	}
	if err := h.Observe(toCheck(bad)); err == nil {
		t.Fatal("history accepted two contents at one version")
	}
}

// TestEveryOperationPassesStrictMerge applies each ring operation our
// allocator performs to a replica and has a 2.8.1 peer that held the ring
// before (peer 4, owning nothing) merge the result.
func TestEveryOperationPassesStrictMerge(t *testing.T) {
	used := []address.Address{smallStart + 20, smallStart + 50}
	grant := func(s, e address.Address, to mesh.PeerName) func(*Ring) error {
		return func(r *Ring) error { return r.GrantRangeToHost(smallStart+s, smallStart+e, to) }
	}
	cases := []struct {
		name string
		peer mesh.PeerName
		op   func(*Ring) error
	}{
		{"grant inside our range", 1, grant(8, 16, 2)},
		{"grant the upper end of our range", 1, grant(24, 32, 3)},
		{"grant from our token", 1, grant(0, 8, 2)},
		{"grant up to the end of the universe", 3, grant(56, 64, 1)},
		{"grant one address (a claim)", 2, grant(40, 41, 1)},
		{"grant twice", 1, func(r *Ring) error {
			if err := r.GrantRangeToHost(smallStart+24, smallStart+32, 2); err != nil {
				return err
			}
			r.ReportFree(freeExcept(used...))
			return r.GrantRangeToHost(smallStart+12, smallStart+16, 3)
		}},
		{"rmpeer (takeover of peer 3)", 1, func(r *Ring) error { r.Transfer(3, 1); return nil }},
		{"reset (hand-over to peer 2)", 1, func(r *Ring) error { r.Transfer(1, 2); return nil }},
		{"free count change", 1, func(r *Ring) error { r.ReportFree(freeExcept(smallStart + 3)); return nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := New(smallStart, smallEnd, c.peer)
			if err := r.ClaimForPeers([]mesh.PeerName{1, 2, 3}); err != nil {
				t.Fatal(err)
			}
			r.ReportFree(freeExcept(used...))
			before := r.Clone()
			if err := c.op(r); err != nil {
				t.Fatal(err)
			}
			strictAccepts(t, c.name+" (before ReportFree)", 4, before, r)
			r.ReportFree(freeExcept(used...))
			strictAccepts(t, c.name, 4, before, r)
			var h ringcheck.History
			for _, x := range []*Ring{before, r} {
				if err := h.Observe(toCheck(x)); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
			}
		})
	}
}
