package dns

import (
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"
)

// FuzzGossipDecode feeds arbitrary bytes to the decoder and to every
// gossip entry point of a live nameserver: errors are fine; panics, hangs
// and a broken replica (unsorted, duplicate records) are not. Seeds are the
// 2.8.1-layout vector and our own encodings.
func FuzzGossipDecode(f *testing.F) {
	if raw, err := os.ReadFile("testdata/gossip-vector.hex"); err == nil {
		if b, err := hex.DecodeString(strings.TrimSpace(string(raw))); err == nil {
			f.Add(b)
		}
	}
	f.Add(payload(t0.Unix(), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 1, 0)))
	f.Add(payload(t0.Unix()))
	f.Add([]byte{0x03, 0xff, 0x82, 0x01})
	c := &clock{t: t0}
	n, _ := newNS(&testing.T{}, peerA, c, peerB)
	f.Fuzz(func(t *testing.T, data []byte) {
		if g, err := DecodeGossip(data); err == nil {
			_ = g.Encode() // must not panic
		}
		_, _ = n.OnGossip(data)
		_, _ = n.OnGossipBroadcast(peerB, data)
		_ = n.OnGossipUnicast(peerB, data)
		es := n.Entries()
		if !slices.IsSortedFunc(es, compareStored) {
			t.Fatal("replica not sorted")
		}
		for i := 1; i < len(es); i++ {
			if es[i].sameRecord(&es[i-1]) {
				t.Fatalf("duplicate record %+v", es[i])
			}
		}
	})
}
