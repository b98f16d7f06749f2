// Package burst brackets what a receive loop handles back to back: the
// capture loop and the sleeve receive loop each call Begin before an item
// and End once nothing more is waiting, so whoever they hand items to
// (sleeve's send runs, the capture socket's batched injects) can hold back
// its writes and send them together when the burst ends.
package burst

// Bracket is one loop's burst state; its owner's lock guards it. The zero
// value brackets nothing.
type Bracket struct {
	begin, end func()
	max        int // items after which a burst is ended early
	open       bool
	n          int // items handled in the open burst
}

// Set installs begin and end (nil for either turns bracketing off),
// ending the open burst, if any, with the old end first. A burst is ended
// after max items (max <= 0: only by End), so held-back writes wait for a
// bounded number of items.
func (b *Bracket) Set(begin, end func(), max int) {
	b.End()
	if begin == nil || end == nil {
		begin, end = nil, nil
	}
	b.begin, b.end, b.max = begin, end, max
}

// Begin opens a burst, calling begin, unless one is open or none is set.
// Call it before handling an item.
func (b *Bracket) Begin() {
	if !b.open && b.begin != nil {
		b.begin()
		b.open, b.n = true, 0
	}
}

// Handled counts k items handled in the open burst and ends it at max.
func (b *Bracket) Handled(k int) {
	if !b.open {
		return
	}
	if b.n += k; b.max > 0 && b.n >= b.max {
		b.End()
	}
}

// End ends the open burst, if any, calling end.
func (b *Bracket) End() {
	if b.open {
		b.open = false
		b.end()
	}
}
