package gobwire

import (
	"bytes"
	"encoding/gob"
	"errors"
	"testing"
)

// Values written by encoding/gob itself read back exactly.
func TestReadsWhatGobWrites(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 127, 128, -129, 1 << 40, -(1 << 62)} {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(v); err != nil {
			t.Fatal(err)
		}
		r := Reader{B: buf.Bytes()}
		m := r.Message()
		if id := m.Int(); id != 2 { // gob's built-in type id for int
			t.Fatalf("%d: type id %d, want 2", v, id)
		}
		if m.Uint() != 0 { // singleton marker
			t.Fatalf("%d: no singleton marker", v)
		}
		if got := m.Int(); got != v || m.Err != nil || len(m.B) != 0 || len(r.B) != 0 {
			t.Fatalf("read %d (err %v, %d+%d left), want %d", got, m.Err, len(m.B), len(r.B), v)
		}
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode("weave"); err != nil {
		t.Fatal(err)
	}
	r := Reader{B: buf.Bytes()}
	m := r.Message()
	if id := m.Int(); id != 6 { // gob's built-in type id for string
		t.Fatalf("string type id %d, want 6", id)
	}
	m.Uint()
	if s := m.Str(); s != "weave" || m.Err != nil {
		t.Fatalf("Str = %q, %v", s, m.Err)
	}
}

func TestRejectsMalformed(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":              {},
		"count byte 0x80":    {0x80, 1, 2, 3},
		"9-byte count":       {0xf7, 1, 2, 3, 4, 5, 6, 7, 8, 9},
		"truncated uint":     {0xfe, 1},
		"non-minimal 0x05":   {0xff, 0x05},
		"non-minimal 2-byte": {0xfe, 0x00, 0x90},
		"string too long":    {0x05, 'a', 'b'},
	} {
		r := Reader{B: b}
		r.Str()
		if !errors.Is(r.Err, ErrShort) || r.B != nil {
			t.Errorf("%s: err %v, %d bytes left; want ErrShort and nothing left", name, r.Err, len(r.B))
		}
		if r.Uint() != 0 { // the error sticks
			t.Errorf("%s: read after failure returned data", name)
		}
	}
}
