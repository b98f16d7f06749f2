package ipam

import (
	"os"
	"testing"
)

// FuzzGossipPayload feeds arbitrary bytes to every gossip entry point of a
// live allocator (invariants checked after each action): errors are fine,
// panics and broken invariants are not. Seeds are Weave's real payloads.
func FuzzGossipPayload(f *testing.F) {
	if raw, err := os.ReadFile("testdata/plain-ipam-ipallocation.jsonl"); err == nil && len(raw) > 0 {
		for _, p := range loadCapturedFrom(f, raw) {
			f.Add(p)
			f.Add(append([]byte{msgRingUpdate}, p...))
		}
	}
	f.Add([]byte{msgSpaceRequest, 0x03, 0xff, 0x82, 0x01})
	n := newMemNet(f, 1)
	a := n.addPeer(1, consensus(1))
	n.allocate(a, "x", universe12)
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = a.OnGossipUnicast(0x0a0000000002, data)
		_, _ = a.OnGossipBroadcast(0x0a0000000002, data)
		_, _ = a.OnGossip(data)
		if st := a.Status(); st.State == "stopped" {
			t.Fatal("allocator died")
		}
	})
}
