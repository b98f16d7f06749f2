package mesh

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/seedf75a49c6/weave/internal/gobwire"
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
	r := gobwire.Reader{B: b}
	def := r.Message()
	id := def.Int()
	if r.Err != nil || def.Err != nil || id >= 0 {
		return lay, nil, fmt.Errorf("parse features type definition: %w", errors.Join(ErrBadGob, r.Err, def.Err))
	}
	lay.TypeID = int(-id)
	want := mapTypeDef(lay.TypeID)
	if !bytes.Equal(def.B, want) {
		return lay, nil, fmt.Errorf("parse features type definition %x: %w", def.B, ErrBadGob)
	}
	val := r.Message()
	m, err := parseFeaturesValue(&val, lay.TypeID, &lay)
	if err == nil && (r.Err != nil || len(r.B) != 0) {
		err = fmt.Errorf("parse features: %w", errors.Join(ErrTrailing, r.Err))
	}
	return lay, m, err
}

func parseFeaturesValue(val *gobwire.Reader, typeID int, lay *FeaturesLayout) (map[string]string, error) {
	if val.Int() != int64(typeID) || val.Uint() != 0 {
		return nil, fmt.Errorf("parse features value header: %w", ErrBadGob)
	}
	n := val.Uint()
	if val.Err != nil || n > uint64(len(val.B)) {
		return nil, fmt.Errorf("parse features count %d: %w", n, errors.Join(ErrBadGob, val.Err))
	}
	m := make(map[string]string, n)
	for range n {
		k, v := val.Str(), val.Str()
		if val.Err != nil {
			return nil, fmt.Errorf("parse features entry: %w", val.Err)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("parse features key %q twice: %w", k, ErrBadGob)
		}
		lay.Keys = append(lay.Keys, k)
		m[k] = v
	}
	if len(val.B) != 0 {
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
