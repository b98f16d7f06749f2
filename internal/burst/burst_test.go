package burst

import (
	"slices"
	"testing"
)

func TestBracket(t *testing.T) {
	var calls []string
	var b Bracket
	b.Begin() // nothing set: no burst
	b.Handled(1)
	b.End()
	if len(calls) != 0 {
		t.Fatalf("calls with nothing set: %v", calls)
	}
	b.Set(func() { calls = append(calls, "begin") }, func() { calls = append(calls, "end") }, 3)
	b.Begin()
	b.Handled(1)
	b.Begin() // open already: no second begin
	b.Handled(1)
	b.End()
	b.End() // ended already
	// A burst reaching max ends at once; the next item opens a new one.
	b.Begin()
	b.Handled(2)
	b.Begin()
	b.Handled(1)
	b.Begin()
	b.Handled(1)
	want := []string{"begin", "end", "begin", "end", "begin"}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	// Set ends the open burst with the old end; nil turns bracketing off.
	b.Set(nil, func() { calls = append(calls, "new end") }, 3)
	b.Begin()
	b.End()
	if want = append(want, "end"); !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
}

// With max <= 0 only End ends a burst.
func TestBracketUnbounded(t *testing.T) {
	ends := 0
	var b Bracket
	b.Set(func() {}, func() { ends++ }, 0)
	b.Begin()
	b.Handled(1000)
	if ends != 0 {
		t.Fatalf("ended after 1000 items with max 0")
	}
	b.End()
	if ends != 1 {
		t.Fatalf("ends = %d, want 1", ends)
	}
}
