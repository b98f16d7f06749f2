package netns

import (
	"crypto/rand"
	"encoding/hex"
)

// randomName returns prefix followed by 5 random hex characters, short
// enough to leave room in a 15-byte interface name.
func randomName(prefix string) string {
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return prefix + hex.EncodeToString(b[:])[:5]
}
