// Package mesh is weave's side of github.com/weaveworks/mesh: peer identity
// (names persisted in the data dir), a log adapter, and wire-format helpers
// and test vectors for Weave Net 2.8.1's TCP control protocol.
//
// The TCP protocol itself (handshake, crypto, gossip) is implemented by the
// mesh library; the helpers in wire.go re-implement its encodings
// independently so that the captured Weave 2.8.1 vectors in testdata/ can
// be checked byte for byte and fuzzed.
package mesh
