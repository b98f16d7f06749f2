package sleeve

import (
	"bytes"
	"testing"
)

// TestSplitGRO: a GRO receive splits at every seg bytes, keeps a shorter
// last datagram, and is one datagram when seg says nothing (0, negative,
// or not less than the receive).
func TestSplitGRO(t *testing.T) {
	p := patterned(10)
	for _, tc := range []struct {
		seg  int
		want []int // datagram lengths
	}{
		{0, []int{10}}, {-1, []int{10}}, {10, []int{10}}, {11, []int{10}}, {1 << 20, []int{10}},
		{5, []int{5, 5}},    // exact boundaries
		{4, []int{4, 4, 2}}, // a last short datagram
		{3, []int{3, 3, 3, 1}}, {1, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
	} {
		var got []int
		var joined []byte
		for rest := p; ; {
			var d []byte
			d, rest = splitGRO(rest, tc.seg)
			got = append(got, len(d))
			joined = append(joined, d...)
			if len(rest) == 0 {
				break
			}
		}
		if !equalInts(got, tc.want) || !bytes.Equal(joined, p) {
			t.Errorf("seg %d: datagrams %v (joined equal %v), want %v", tc.seg, got, bytes.Equal(joined, p), tc.want)
		}
	}
	if d, rest := splitGRO(nil, 1400); len(d) != 0 || len(rest) != 0 {
		t.Error("an empty receive must be one empty datagram")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzSplitGRO: whatever the buffer and the reported segment size, the
// pieces cover the buffer in order, every one but the last is seg bytes,
// the last is 1 to seg bytes, and none is empty unless the buffer is.
func FuzzSplitGRO(f *testing.F) {
	f.Add([]byte("0123456789"), 4)
	f.Add([]byte{}, 1400)
	f.Add([]byte("ab"), -7)
	f.Fuzz(func(t *testing.T, p []byte, seg int) {
		var joined []byte
		n := 0
		for rest := p; ; {
			var d []byte
			d, rest = splitGRO(rest, seg)
			n++
			joined = append(joined, d...)
			if len(rest) == 0 {
				if seg > 0 && len(d) > seg && n > 1 {
					t.Fatalf("last datagram %d bytes > seg %d", len(d), seg)
				}
				break
			}
			if len(d) != seg {
				t.Fatalf("datagram %d of %d bytes, seg %d", n, len(d), seg)
			}
			if n > len(p)+1 {
				t.Fatal("more datagrams than bytes")
			}
		}
		if !bytes.Equal(joined, p) {
			t.Fatal("datagrams do not cover the receive")
		}
		if len(p) > 0 && seg > 0 && seg < len(p) && n != (len(p)+seg-1)/seg {
			t.Fatalf("%d datagrams of %d bytes by %d", n, len(p), seg)
		}
	})
}
