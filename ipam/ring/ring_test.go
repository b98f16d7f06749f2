package ring

import (
	"bytes"
	"encoding/gob"
	"errors"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

const (
	uStart = address.Address(0x0a200000) // 10.32.0.0
	uEnd   = address.Address(0x0a300000) // 10.48.0.0
)

func TestClaimForPeersSplitsLikeWeave(t *testing.T) {
	r := New(uStart, uEnd, 1)
	if err := r.ClaimForPeers([]mesh.PeerName{2, 1, 2}); err != nil {
		t.Fatal(err)
	}
	want := "ring 10.32.0.0-10.48.0.0 peer 00:00:00:00:00:01 seeds [00:00:00:00:00:01 00:00:00:00:00:02]: " +
		"10.32.0.0->00:00:00:00:00:01(v0,free 524288) 10.40.0.0->00:00:00:00:00:02(v0,free 524288)"
	if r.String() != want {
		t.Fatalf("got %s", r)
	}
	small := New(0, 2, 1)
	if err := small.ClaimForPeers([]mesh.PeerName{1, 2, 3}); !errors.Is(err, ErrTooSmall) {
		t.Fatalf("too small: %v", err)
	}
}

func TestMergeRejects(t *testing.T) {
	a := New(uStart, uEnd, 1)
	_ = a.ClaimForPeers([]mesh.PeerName{1, 2})
	b := New(uStart, uEnd, 3)
	_ = b.ClaimForPeers([]mesh.PeerName{3, 4})
	if _, err := a.Merge(b); !errors.Is(err, ErrDifferentSeeds) {
		t.Fatalf("different seeds: %v", err)
	}
	c := New(uStart, uEnd+1, 2)
	if _, err := a.Merge(c); !errors.Is(err, ErrDifferentRange) {
		t.Fatalf("different range: %v", err)
	}
	bad := a.Clone()
	bad.Entries[0].Free = 1 << 30
	if _, err := New(uStart, uEnd, 2).Merge(bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid ring: %v", err)
	}
	// Peer 2 claims a token inside a range peer 1 uses.
	a.ReportFree(func(address.Range) address.Count { return 5 })
	intruder := a.Clone()
	intruder.Peer = 2
	intruder.Entries = append(entries{intruder.Entries[0], {Token: uStart + 100, Peer: 2}}, intruder.Entries[1:]...)
	before := a.String()
	if _, err := a.Merge(intruder); !errors.Is(err, ErrEntryInMyRange) {
		t.Fatalf("intruding token: %v", err)
	}
	if a.String() != before {
		t.Fatal("rejected merge modified the ring")
	}
}

func TestGrantAndTransfer(t *testing.T) {
	r := New(uStart, uEnd, 1)
	_ = r.ClaimForPeers([]mesh.PeerName{1, 2})
	if err := r.GrantRangeToHost(uStart+0x40000, uStart+0x80000, 3); err != nil {
		t.Fatal(err)
	}
	if err := r.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if r.Owner(uStart+0x40000) != 3 || r.Owner(uStart+0x80000) != 2 || r.Owner(uStart+0x3ffff) != 1 || r.Owner(uStart) != 1 {
		t.Fatalf("after grant: %s", r)
	}
	if err := r.GrantRangeToHost(uStart+0x80000, uStart+0x90000, 3); err == nil {
		t.Fatal("granted space we do not own")
	}
	moved := r.Transfer(3, 1)
	if len(moved) != 1 || moved[0] != address.NewRange(uStart+0x40000, 0x40000) {
		t.Fatalf("moved %v", moved)
	}
	if e := r.Entries[1]; e.Peer != 1 || e.Version != TransferVersionBump {
		t.Fatalf("transferred entry %+v", e)
	}
}

// FuzzRingMerge drives replicas of one ring through grants, free reports
// and merges chosen by the fuzz input; invariants must hold after every
// step, merges must be idempotent, and gossip to a fixpoint must converge.
// It also feeds the raw input to the gob decoder + Merge (no panics).
func FuzzRingMerge(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{2, 0, 1, 0, 9, 200, 1, 3, 77, 2, 3, 0, 0, 1, 2, 3})
	f.Add(bytes.Repeat([]byte{0, 5, 1, 2}, 20))
	f.Fuzz(runOne)
}

func runOne(t *testing.T, data []byte) {
	if len(data) > 1024 {
		return // keep each execution fast
	}
	{
		fuzzDecode(t, data)
		const n = 4
		reps := make([]*Ring, n)
		for i := range reps {
			reps[i] = New(uStart, uEnd, mesh.PeerName(i+1))
			if err := reps[i].ClaimForPeers([]mesh.PeerName{1, 2, 3, 4}); err != nil {
				t.Fatal(err)
			}
		}
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := int(data[0])
			data = data[1:]
			return b
		}
		for len(data) > 0 {
			p, q := next()%n, next()%n
			switch next() % 3 {
			case 0: // p grants part of one of its ranges to q
				if rs := reps[p].OwnedRanges(); len(rs) > 0 && p != q {
					x := rs[next()%len(rs)]
					sz := address.Offset(1) << (next() % 20)
					if sz < x.Size() {
						_ = reps[p].GrantRangeToHost(x.End-address.Address(sz), x.End, mesh.PeerName(q+1))
					}
				}
			case 1: // p reports a random free count
				k := address.Count(next())
				reps[p].ReportFree(func(r address.Range) address.Count { return min(k, address.Count(r.Size())) })
			case 2:
				mergeChecked(t, reps[q], reps[p])
			}
			for _, r := range reps {
				if err := r.CheckInvariants(); err != nil {
					t.Fatalf("invariant: %v\n%s", err, r)
				}
			}
		}
		for round := 0; round < 2; round++ { // two all-pairs passes reach the fixpoint
			for p := range reps {
				for q := range reps {
					mergeChecked(t, reps[q], reps[p])
				}
			}
		}
		for i := 1; i < n; i++ {
			if !reps[0].equalEntries(reps[i]) {
				t.Fatalf("replicas did not converge:\n%s\n%s", reps[0], reps[i])
			}
		}
	}
}

func mergeChecked(t *testing.T, dst, src *Ring) {
	t.Helper()
	if _, err := dst.Merge(src.Clone()); err != nil {
		t.Fatalf("merge %s into %s: %v", src.Peer, dst.Peer, err)
	}
	if changed, err := dst.Merge(src.Clone()); err != nil || changed {
		t.Fatalf("merge not idempotent: changed=%v err=%v", changed, err)
	}
}

func fuzzDecode(t *testing.T, data []byte) {
	var r Ring
	if gob.NewDecoder(bytes.NewReader(data)).Decode(&r) != nil {
		return
	}
	base := New(uStart, uEnd, 9)
	if _, err := base.Merge(&r); err == nil {
		if err := base.CheckInvariants(); err != nil {
			t.Fatalf("accepted merge broke invariants: %v", err)
		}
	}
}

// TestMergeTokenRules covers each same-token rule of Merge.
func TestMergeTokenRules(t *testing.T) {
	base := func(owner mesh.PeerName) *Ring {
		r := New(uStart, uEnd, owner)
		_ = r.ClaimForPeers([]mesh.PeerName{1, 2})
		return r
	}
	half := address.Count(0x80000)

	// Repair: someone else's newer version of our unused token is accepted.
	mine, theirs := base(1), base(2)
	theirs.Entries[0].Peer, theirs.Entries[0].Version = 2, 5
	if _, err := mine.Merge(theirs); err != nil || mine.Entries[0].Peer != 2 {
		t.Fatalf("repair: %v %s", err, mine)
	}

	// ... but not when we use it.
	mine = base(1)
	mine.Entries[0].Free = half - 3
	if _, err := mine.Merge(theirs); !errors.Is(err, ErrNewerVersion) {
		t.Fatalf("newer version of used token: %v", err)
	}

	// An old incarnation of ours at a newer version: keep ours, version+1.
	mine = base(1)
	old := base(2)
	old.Entries[0].Version, old.Entries[0].Free = 7, 1
	if _, err := mine.Merge(old); err != nil || mine.Entries[0].Version != 8 || mine.Entries[0].Free != half {
		t.Fatalf("reassert: %v %s", err, mine)
	}

	// Equal version, different content, not ours: larger Free wins.
	r := base(3)
	other := base(2)
	other.Entries[1].Free = half - 1
	r.Entries[1].Free = half - 2
	if _, err := r.Merge(other); err != nil || r.Entries[1].Free != half-1 {
		t.Fatalf("tie-break: %v %s", err, r)
	}

	// Tentative token yields to a higher-ranked competing takeover.
	mine = base(1)
	mine.Transfer(2, 1)
	mine.SetTentative(map[address.Address]bool{mine.Entries[1].Token: true})
	rival := base(3)
	rival.Transfer(2, 3)
	if _, err := mine.Merge(rival); err != nil || mine.Entries[1].Peer != 3 {
		t.Fatalf("tentative yield: %v %s", err, mine)
	}
	// A non-tentative used token of ours does not yield.
	mine = base(1)
	mine.Transfer(2, 1)
	mine.Entries[1].Free = 0
	if _, err := mine.Merge(rival); err == nil {
		t.Fatalf("used token yielded to equal-version rival: %s", mine)
	}
}
