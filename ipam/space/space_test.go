package space

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/address"
)

func mustAdd(t *testing.T, s *Space, r address.Range) {
	t.Helper()
	if err := s.Add(r); err != nil {
		t.Fatal(err)
	}
}

func TestAllocateLowestFirst(t *testing.T) {
	s := New()
	mustAdd(t, s, address.NewRange(100, 10))
	for want := address.Address(100); want < 110; want++ {
		got, ok := s.Allocate(address.NewRange(0, 1000))
		if !ok || got != want {
			t.Fatalf("got %v %v want %v", got, ok, want)
		}
	}
	if _, ok := s.Allocate(address.NewRange(0, 1000)); ok {
		t.Fatal("allocated from full space")
	}
	if err := s.Free(104); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Allocate(address.NewRange(0, 1000)); got != 104 {
		t.Fatalf("got %v after free, want 104", got)
	}
	if err := s.Free(999); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("free of unallocated: %v", err)
	}
}

func TestClaim(t *testing.T) {
	s := New()
	mustAdd(t, s, address.NewRange(0, 8))
	if err := s.Claim(5); err != nil {
		t.Fatal(err)
	}
	if err := s.Claim(5); !errors.Is(err, ErrInUse) {
		t.Fatalf("double claim: %v", err)
	}
	if err := s.Claim(50); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("claim outside: %v", err)
	}
	if n := s.NumFreeAddressesInRange(address.NewRange(0, 8)); n != 7 {
		t.Fatalf("free = %d", n)
	}
}

func TestDonateUpperHalfAligned(t *testing.T) {
	s := New()
	mustAdd(t, s, address.NewRange(0, 16))
	s.Allocate(address.NewRange(0, 16))
	r, ok := s.Donate(address.NewRange(0, 16))
	// 15 free: at most 7 -> block of 4, highest aligned: 12..16.
	if !ok || r != address.NewRange(12, 4) {
		t.Fatalf("donated %v %v", r, ok)
	}
	if s.Owns(13) || !s.Owns(11) {
		t.Fatal("donated space still owned")
	}
	one := New()
	mustAdd(t, one, address.NewRange(7, 1))
	if r, ok := one.Donate(address.NewRange(0, 100)); !ok || r != address.NewRange(7, 1) {
		t.Fatalf("single address donation %v %v", r, ok)
	}
}

// TestRandomOps checks invariants and conservation after every random step.
func TestRandomOps(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	s := New()
	universe := address.NewRange(1000, 256)
	mustAdd(t, s, universe)
	owned := universe.Size()
	for step := 0; step < 5000; step++ {
		switch rnd.IntN(4) {
		case 0, 1:
			s.Allocate(address.NewRange(1000+address.Address(rnd.IntN(256)), 64))
		case 2:
			if al := s.Allocated(); len(al) > 0 {
				if err := s.Free(al[rnd.IntN(len(al))]); err != nil {
					t.Fatal(err)
				}
			}
		case 3:
			if rnd.IntN(20) == 0 {
				if r, ok := s.Donate(universe); ok {
					owned -= r.Size()
				}
			}
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if got := uint32(s.NumFreeAddressesInRange(universe)) + uint32(s.NumAllocated()); got != owned {
			t.Fatalf("step %d: free+allocated %d != owned %d", step, got, owned)
		}
	}
}
