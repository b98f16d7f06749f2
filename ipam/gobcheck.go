package ipam

import (
	"errors"
	"fmt"
	"github.com/seedf75a49c6/weave/internal/gobwire"
)

// encoding/gob's map decoder trusts the element count: once the input is
// exhausted, struct keys and values decode from zero bytes, so a payload
// claiming 2^60 map entries spins forever (found by FuzzGossipPayload).
// checkGob walks the stream first and rejects any slice, map, string or
// byte count larger than the bytes left, any unknown type, and nesting
// deeper than maxGobDepth, so gob only ever sees bounded input.

const maxGobDepth = 32

// errBadGob marks gob data that is well formed but not what IPAM accepts
// (unknown types, counts beyond the input, too deep); errShortGob marks
// data that ends early or is malformed at the byte level.
var (
	errShortGob = gobwire.ErrShort
	errBadGob   = errors.New("bad gob data")
)

// gobReader walks gob type definitions and values (methods below) over the
// primitive reader, so that counts can be checked before encoding/gob
// decodes untrusted bytes.
type gobReader struct{ gobwire.Reader }

// structFields walks a struct encoding, calling f with each field number.
func (r *gobReader) structFields(f func(field int)) {
	field := 0
	for r.Err == nil {
		d := r.Uint()
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
			d.name = r.Str()
		case 2:
			r.Int()
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
				n := r.Uint()
				for i := uint64(0); i < n && r.Err == nil; i++ {
					r.structFields(func(h int) {
						if h == 1 {
							d.fields = append(d.fields, r.Str())
						} else {
							d.refs = append(d.refs, r.Int())
						}
					})
				}
			default:
				d.refs = append(d.refs, r.Int())
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
	r := &gobReader{gobwire.Reader{B: stream}}
	for len(r.B) > 0 && r.Err == nil {
		n := r.Uint()
		if r.Err == nil && uint64(len(r.B)) < n {
			return fmt.Errorf("check gob: message of %d bytes, %d left: %w", n, len(r.B), errShortGob)
		}
		if r.Err != nil {
			break
		}
		m := &gobReader{gobwire.Reader{B: r.B[:n]}}
		r.B = r.B[n:]
		if err := c.message(m); err != nil {
			return fmt.Errorf("check gob: %w", err)
		}
	}
	if r.Err != nil {
		return fmt.Errorf("check gob: %w", r.Err)
	}
	return nil
}

func (c *gobChecker) message(m *gobReader) error {
	id := m.Int()
	if id < 0 {
		d := m.wireType()
		if m.Err == nil && d.kind == "" {
			return fmt.Errorf("type %d: %w: empty definition", -id, errBadGob)
		}
		c.types[-id] = d
		return m.Err
	}
	if d, ok := c.types[id]; !ok || d.kind != "struct" {
		if m.Uint() != 0 { // singleton marker
			return fmt.Errorf("value of type %d: %w: no singleton marker", id, errBadGob)
		}
	}
	c.value(m, id, 0)
	return m.Err
}

// value walks one value of type id, recording the first problem in m.Err.
func (c *gobChecker) value(m *gobReader, id int64, depth int) {
	if m.Err != nil {
		return
	}
	if depth > maxGobDepth {
		m.Err = fmt.Errorf("%w: nesting deeper than %d", errBadGob, maxGobDepth)
		return
	}
	switch id {
	case gobBool, gobInt, gobUint, gobFloat:
		m.Uint()
		return
	case gobBytes, gobString:
		m.Str()
		return
	}
	d, ok := c.types[id]
	if !ok {
		m.Err = fmt.Errorf("%w: unsupported or undefined type %d", errBadGob, id)
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
		m.Err = fmt.Errorf("%w: unsupported kind %s", errBadGob, d.kind)
	}
}

func (c *gobChecker) structValue(m *gobReader, d wireDef, depth int) {
	field := -1
	for len(m.B) > 0 && m.Err == nil { // like gob, a struct may end at EOF
		delta := m.Uint()
		if delta == 0 {
			return
		}
		field += int(delta)
		if delta > uint64(len(d.refs)) || field >= len(d.refs) {
			m.Err = fmt.Errorf("%w: field %d of %d in %q", errBadGob, field, len(d.refs), d.name)
			return
		}
		c.value(m, d.refs[field], depth+1)
	}
}

// count reads an element count and rejects one larger than the bytes left.
func (m *gobReader) count() uint64 {
	n := m.Uint()
	if m.Err == nil && n > uint64(len(m.B)) {
		m.Err = fmt.Errorf("%w: count %d exceeds %d bytes left", errBadGob, n, len(m.B))
	}
	return n
}

func (c *gobChecker) sliceValue(m *gobReader, d wireDef, depth int) {
	if len(d.refs) < 1 {
		m.Err = fmt.Errorf("%w: slice without element type", errBadGob)
		return
	}
	n := m.count()
	for i := uint64(0); i < n && m.Err == nil; i++ {
		c.value(m, d.refs[0], depth+1)
	}
}

func (c *gobChecker) mapValue(m *gobReader, d wireDef, depth int) {
	if len(d.refs) < 2 {
		m.Err = fmt.Errorf("%w: map without key/element types", errBadGob)
		return
	}
	n := m.count()
	for i := uint64(0); i < n && m.Err == nil; i++ {
		if len(m.B) == 0 {
			m.Err = fmt.Errorf("%w: map of %d entries ends after %d", errShortGob, n, i)
			return
		}
		c.value(m, d.refs[0], depth+1)
		c.value(m, d.refs[1], depth+1)
	}
}
