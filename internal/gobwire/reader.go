// Package gobwire reads the primitives of encoding/gob's wire format
// (unsigned and signed integers, strings, length-prefixed messages) from
// untrusted bytes. Code that must inspect a gob stream before handing it to
// encoding/gob (which trusts counts and can spin on hostile input), or that
// checks an exact byte layout, builds on it. The first error sticks, so a
// caller may read a whole structure and check Err once.
package gobwire

import "errors"

// ErrShort reports input that ends early or is not what gob writes.
var ErrShort = errors.New("truncated input")

// Reader consumes gob primitives from B. The zero value reads nothing.
type Reader struct {
	B   []byte // unread input
	Err error  // first failure; once set, every read returns zero
}

// Fail records ErrShort and drops the rest of the input.
func (r *Reader) Fail() { r.Err, r.B = ErrShort, nil }

// Uint reads a gob unsigned integer: one byte below 0x80, else a negated
// byte count (0xff = 1 ... 0xf8 = 8) followed by that many big-endian
// bytes. Non-minimal encodings, which gob never writes, are rejected.
func (r *Reader) Uint() uint64 {
	if r.Err != nil || len(r.B) == 0 {
		r.Fail()
		return 0
	}
	c := r.B[0]
	r.B = r.B[1:]
	if c < 0x80 {
		return uint64(c)
	}
	n := 256 - int(c) // 0x80 must not wrap to a huge count
	if n > 8 || n > len(r.B) {
		r.Fail()
		return 0
	}
	var x uint64
	for _, d := range r.B[:n] {
		x = x<<8 | uint64(d)
	}
	r.B = r.B[n:]
	if x < 0x80 || x>>(8*(n-1)) == 0 {
		r.Fail()
		return 0
	}
	return x
}

// Int reads a gob signed integer (zig-zag over Uint: bit 0 is the sign).
func (r *Reader) Int() int64 {
	u := r.Uint()
	if u&1 != 0 {
		return ^int64(u >> 1)
	}
	return int64(u >> 1)
}

// Str reads a length-prefixed string.
func (r *Reader) Str() string {
	n := r.Uint()
	if r.Err != nil || n > uint64(len(r.B)) {
		r.Fail()
		return ""
	}
	s := string(r.B[:n])
	r.B = r.B[n:]
	return s
}

// Message splits off one length-prefixed gob message as its own Reader.
func (r *Reader) Message() Reader {
	n := r.Uint()
	if r.Err != nil || n > uint64(len(r.B)) {
		r.Fail()
		return Reader{Err: ErrShort}
	}
	m := Reader{B: r.B[:n]}
	r.B = r.B[n:]
	return m
}
