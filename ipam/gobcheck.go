package ipam

import (
	"errors"
	"fmt"
)

// encoding/gob's map decoder trusts the element count: once the input is
// exhausted, struct keys and values decode from zero bytes, so a payload
// claiming 2^60 map entries spins forever (found by FuzzGossipPayload).
// checkGob walks the stream first and rejects any slice, map, string or
// byte count larger than the bytes left, any unknown type, and nesting
// deeper than maxGobDepth, so gob only ever sees bounded input.

const maxGobDepth = 32

var (
	errShortGob = errors.New("short gob data")
	errBadGob   = errors.New("bad gob data")
)

// gobReader is a minimal reader of the gob wire format: enough to walk type
// definitions and values so that counts can be checked before
// encoding/gob decodes untrusted bytes.
type gobReader struct {
	b   []byte
	err error
}

func (r *gobReader) uint() uint64 {
	if r.err != nil || len(r.b) == 0 {
		r.err = errShortGob
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	if c < 0x80 {
		return uint64(c)
	}
	n := 256 - int(c) // byte count, negated
	if n > 8 || len(r.b) < n {
		r.err = errBadGob
		return 0
	}
	var x uint64
	for _, d := range r.b[:n] {
		x = x<<8 | uint64(d)
	}
	r.b = r.b[n:]
	return x
}

func (r *gobReader) int() int64 {
	u := r.uint()
	if u&1 != 0 {
		return ^int64(u >> 1)
	}
	return int64(u >> 1)
}

func (r *gobReader) string() string {
	n := r.uint()
	if r.err != nil || uint64(len(r.b)) < n {
		r.err = errShortGob
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// structFields walks a struct encoding, calling f with each field number.
func (r *gobReader) structFields(f func(field int)) {
	field := 0
	for r.err == nil {
		d := r.uint()
		if d == 0 {
			return
		}
		field += int(d)
		f(field)
	}
}

// wireDef is a decoded gob wireType, reduced to what identifies a type.
type wireDef struct {
	kind, name string
	refs       []int64 // element/key/field type ids
	fields     []string
}

func (r *gobReader) commonType(d *wireDef) {
	r.structFields(func(f int) {
		switch f {
		case 1:
			d.name = r.string()
		case 2:
			r.int()
		}
	})
}

func (r *gobReader) wireType() wireDef {
	var d wireDef
	r.structFields(func(f int) {
		d.kind = [...]string{"", "array", "slice", "struct", "map", "gobenc", "binmarsh", "textmarsh"}[min(f, 7)]
		r.structFields(func(g int) {
			switch {
			case g == 1:
				r.commonType(&d)
			case g == 2 && f == 3:
				n := r.uint()
				for i := uint64(0); i < n && r.err == nil; i++ {
					r.structFields(func(h int) {
						if h == 1 {
							d.fields = append(d.fields, r.string())
						} else {
							d.refs = append(d.refs, r.int())
						}
					})
				}
			default:
				d.refs = append(d.refs, r.int())
			}
		})
	})
	return d
}

// Built-in gob type ids used by IPAM payloads.
const (
	gobBool   = 1
	gobInt    = 2
	gobUint   = 3
	gobFloat  = 4
	gobBytes  = 5
	gobString = 6
)

type gobChecker struct {
	types map[int64]wireDef
}

// checkGob validates a whole gob stream (definitions and values).
func checkGob(stream []byte) error {
	c := &gobChecker{types: map[int64]wireDef{}}
	r := &gobReader{b: stream}
	for len(r.b) > 0 && r.err == nil {
		n := r.uint()
		if r.err == nil && uint64(len(r.b)) < n {
			return fmt.Errorf("check gob: message of %d bytes, %d left: %w", n, len(r.b), errShortGob)
		}
		if r.err != nil {
			break
		}
		m := &gobReader{b: r.b[:n]}
		r.b = r.b[n:]
		if err := c.message(m); err != nil {
			return fmt.Errorf("check gob: %w", err)
		}
	}
	if r.err != nil {
		return fmt.Errorf("check gob: %w", r.err)
	}
	return nil
}

func (c *gobChecker) message(m *gobReader) error {
	id := m.int()
	if id < 0 {
		d := m.wireType()
		if m.err == nil && d.kind == "" {
			return fmt.Errorf("type %d: %w: empty definition", -id, errBadGob)
		}
		c.types[-id] = d
		return m.err
	}
	if d, ok := c.types[id]; !ok || d.kind != "struct" {
		if m.uint() != 0 { // singleton marker
			return fmt.Errorf("value of type %d: %w: no singleton marker", id, errBadGob)
		}
	}
	c.value(m, id, 0)
	return m.err
}

// value walks one value of type id, recording the first problem in m.err.
func (c *gobChecker) value(m *gobReader, id int64, depth int) {
	if m.err != nil {
		return
	}
	if depth > maxGobDepth {
		m.err = fmt.Errorf("%w: nesting deeper than %d", errBadGob, maxGobDepth)
		return
	}
	switch id {
	case gobBool, gobInt, gobUint, gobFloat:
		m.uint()
		return
	case gobBytes, gobString:
		m.string()
		return
	}
	d, ok := c.types[id]
	if !ok {
		m.err = fmt.Errorf("%w: unsupported or undefined type %d", errBadGob, id)
		return
	}
	switch d.kind {
	case "struct":
		c.structValue(m, d, depth)
	case "slice", "array":
		c.sliceValue(m, d, depth)
	case "map":
		c.mapValue(m, d, depth)
	default:
		m.err = fmt.Errorf("%w: unsupported kind %s", errBadGob, d.kind)
	}
}

func (c *gobChecker) structValue(m *gobReader, d wireDef, depth int) {
	field := -1
	for len(m.b) > 0 && m.err == nil { // like gob, a struct may end at EOF
		delta := m.uint()
		if delta == 0 {
			return
		}
		field += int(delta)
		if delta > uint64(len(d.refs)) || field >= len(d.refs) {
			m.err = fmt.Errorf("%w: field %d of %d in %q", errBadGob, field, len(d.refs), d.name)
			return
		}
		c.value(m, d.refs[field], depth+1)
	}
}

// count reads an element count and rejects one larger than the bytes left.
func (m *gobReader) count() uint64 {
	n := m.uint()
	if m.err == nil && n > uint64(len(m.b)) {
		m.err = fmt.Errorf("%w: count %d exceeds %d bytes left", errBadGob, n, len(m.b))
	}
	return n
}

func (c *gobChecker) sliceValue(m *gobReader, d wireDef, depth int) {
	if len(d.refs) < 1 {
		m.err = fmt.Errorf("%w: slice without element type", errBadGob)
		return
	}
	n := m.count()
	for i := uint64(0); i < n && m.err == nil; i++ {
		c.value(m, d.refs[0], depth+1)
	}
}

func (c *gobChecker) mapValue(m *gobReader, d wireDef, depth int) {
	if len(d.refs) < 2 {
		m.err = fmt.Errorf("%w: map without key/element types", errBadGob)
		return
	}
	n := m.count()
	for i := uint64(0); i < n && m.err == nil; i++ {
		if len(m.b) == 0 {
			m.err = fmt.Errorf("%w: map of %d entries ends after %d", errShortGob, n, i)
			return
		}
		c.value(m, d.refs[0], depth+1)
		c.value(m, d.refs[1], depth+1)
	}
}
