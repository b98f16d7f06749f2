package httpapi

import "testing"

// TestAttrString: a connection's attributes print exactly as Weave 2.8.1
// prints them: key=value in key order, the overlay name left out, and no
// separator ("encrypted=truemtu=1414" in 2.8.1's own status output), so
// scripts written against 2.8.1 keep matching.
func TestAttrString(t *testing.T) {
	for _, tc := range []struct {
		attrs map[string]any
		want  string
	}{
		{map[string]any{"name": "fastdp", "mtu": 1376}, "mtu=1376"},
		{map[string]any{"name": "sleeve", "mtu": 65535, "segments": true}, "mtu=65535segments=true"},
		{map[string]any{"name": "sleeve", "mtu": 65449, "jumbo": true}, "jumbo=truemtu=65449"},
		{nil, ""},
	} {
		if got := attrString(tc.attrs); got != tc.want {
			t.Errorf("attrString(%v) = %q, want %q", tc.attrs, got, tc.want)
		}
	}
}
