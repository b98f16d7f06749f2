package mesh

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The features message is a gob stream of two messages: a type definition
// of map[string]string under a process-global type id, then the map value.
// encoding/gob writes map entries in random order and allocates type ids
// per process, so it cannot reproduce a captured message. The functions
// below read and write the exact layout with an explicit type id and key
// order; they are cross-checked against encoding/gob in the tests.

// ErrBadGob reports a gob stream whose layout is not the one expected.
var ErrBadGob = errors.New("unexpected gob layout")

// FeaturesLayout is how a features map was laid out on the wire.
type FeaturesLayout struct {
	TypeID int      // gob type id of map[string]string in the sender's process
	Keys   []string // entry order as sent
}

// ParseFeaturesLayout reads the type id and key order of a features
// message and returns the map as well.
func ParseFeaturesLayout(b []byte) (FeaturesLayout, map[string]string, error) {
	var lay FeaturesLayout
	r := gobReader{b: b}
	def := r.message()
	id := def.int()
	if r.err != nil || def.err != nil || id >= 0 {
		return lay, nil, fmt.Errorf("parse features type definition: %w", errors.Join(ErrBadGob, r.err, def.err))
	}
	lay.TypeID = int(-id)
	want := mapTypeDef(lay.TypeID)
	if !bytes.Equal(def.b, want) {
		return lay, nil, fmt.Errorf("parse features type definition %x: %w", def.b, ErrBadGob)
	}
	val := r.message()
	m, err := parseFeaturesValue(&val, lay.TypeID, &lay)
	if err == nil && (r.err != nil || len(r.b) != 0) {
		err = fmt.Errorf("parse features: %w", errors.Join(ErrTrailing, r.err))
	}
	return lay, m, err
}

func parseFeaturesValue(val *gobReader, typeID int, lay *FeaturesLayout) (map[string]string, error) {
	if val.int() != int64(typeID) || val.uint() != 0 {
		return nil, fmt.Errorf("parse features value header: %w", ErrBadGob)
	}
	n := val.uint()
	if val.err != nil || n > uint64(len(val.b)) {
		return nil, fmt.Errorf("parse features count %d: %w", n, errors.Join(ErrBadGob, val.err))
	}
	m := make(map[string]string, n)
	for range n {
		k, v := val.string(), val.string()
		if val.err != nil {
			return nil, fmt.Errorf("parse features entry: %w", val.err)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("parse features key %q twice: %w", k, ErrBadGob)
		}
		lay.Keys = append(lay.Keys, k)
		m[k] = v
	}
	if len(val.b) != 0 {
		return nil, fmt.Errorf("parse features value: %w", ErrTrailing)
	}
	return m, nil
}

// EncodeFeaturesOrdered encodes m as a features message with the given
// gob type id and key order (keys missing from lay.Keys follow, sorted).
func EncodeFeaturesOrdered(m map[string]string, lay FeaturesLayout) ([]byte, error) {
	if lay.TypeID < 65 || lay.TypeID > 1<<20 {
		return nil, fmt.Errorf("encode features with type id %d: %w", lay.TypeID, ErrBadGob)
	}
	keys := make([]string, 0, len(m))
	seen := make(map[string]bool, len(m))
	for _, k := range lay.Keys {
		if _, ok := m[k]; ok && !seen[k] {
			keys, seen[k] = append(keys, k), true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	var out []byte
	out = appendGobMessage(out, appendGobInt(nil, -int64(lay.TypeID)), mapTypeDef(lay.TypeID))
	body := appendGobUint(appendGobInt(nil, int64(lay.TypeID)), 0)
	body = appendGobUint(body, uint64(len(keys)))
	for _, k := range keys {
		body = appendGobString(appendGobString(body, k), m[k])
	}
	return appendGobMessage(out, nil, body), nil
}

// mapTypeDef is the gob wireType of map[string]string with the given id:
// field 4 (MapT) { field 1 (CommonType) { field 2 (Id) }, Key string, Elem string }.
func mapTypeDef(id int) []byte {
	b := []byte{0x04, 0x01, 0x02}
	b = appendGobInt(b, int64(id))
	return append(b, 0x00, 0x01, 0x0c, 0x01, 0x0c, 0x00, 0x00)
}

func appendGobMessage(out, head, body []byte) []byte {
	out = appendGobUint(out, uint64(len(head)+len(body)))
	return append(append(out, head...), body...)
}

func appendGobUint(b []byte, x uint64) []byte {
	if x < 0x80 {
		return append(b, byte(x))
	}
	var tmp [8]byte
	n := 8
	for ; x > 0; x >>= 8 {
		n--
		tmp[n] = byte(x)
	}
	return append(append(b, byte(-(8-n))), tmp[n:]...)
}

func appendGobInt(b []byte, i int64) []byte {
	var u uint64
	if i < 0 {
		u = uint64(^i<<1) | 1
	} else {
		u = uint64(i << 1)
	}
	return appendGobUint(b, u)
}

func appendGobString(b []byte, s string) []byte {
	return append(appendGobUint(b, uint64(len(s))), s...)
}

// gobReader reads gob primitives; the first error sticks.
type gobReader struct {
	b   []byte
	err error
}

func (r *gobReader) fail() { r.err, r.b = ErrShort, nil }

func (r *gobReader) uint() uint64 {
	if r.err != nil || len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	if c < 0x80 {
		return uint64(c)
	}
	n := 256 - int(c) // 0xff = 1 byte ... 0xf8 = 8 bytes; 0x80 must not wrap
	if n > 8 || n > len(r.b) {
		r.fail()
		return 0
	}
	var x uint64
	for _, d := range r.b[:n] {
		x = x<<8 | uint64(d)
	}
	r.b = r.b[n:]
	if x < 0x80 || x>>(8*(n-1)) == 0 {
		r.fail() // not the minimal encoding gob writes
		return 0
	}
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
	if r.err != nil || n > uint64(len(r.b)) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// message splits off one length-prefixed gob message.
func (r *gobReader) message() gobReader {
	n := r.uint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.fail()
		return gobReader{err: ErrShort}
	}
	m := gobReader{b: r.b[:n]}
	r.b = r.b[n:]
	return m
}
