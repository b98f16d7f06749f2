package ipam

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/seedf75a49c6/weave/ipam/paxos"
	"github.com/seedf75a49c6/weave/ipam/ring"
	"github.com/weaveworks/mesh"
)

// Unicast message kinds: the first byte of an IPallocation unicast payload.
const (
	msgSpaceRequest       byte = 0 // gob address.Range
	msgRingUpdate         byte = 1 // gob gossipState
	msgSpaceRequestDenied byte = 2 // gob address.Range
)

// ErrMalformed marks a gossip payload that could not be decoded.
var ErrMalformed = errors.New("malformed IPAM gossip payload")

// gossipState is the IPallocation gossip payload. The type and field names
// (and the named types of the fields) are what Weave Net 2.8.1 puts on the
// wire: gob announces them in the stream.
type gossipState struct {
	Now       int64
	Nicknames map[mesh.PeerName]string
	Paxos     paxos.GossipState
	Ring      *ring.Ring
}

func encodeState(st *gossipState) []byte {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		panic(fmt.Sprintf("encode IPAM gossip state: %v", err)) // only unencodable types can fail
	}
	return buf.Bytes()
}

func decodeState(payload []byte) (*gossipState, error) {
	if err := checkGob(payload); err != nil {
		return nil, fmt.Errorf("decode gossip state (%d bytes): %w: %w", len(payload), ErrMalformed, err)
	}
	var st gossipState
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&st); err != nil {
		return nil, fmt.Errorf("decode gossip state (%d bytes): %w: %w", len(payload), ErrMalformed, err)
	}
	if st.Ring != nil {
		if err := st.Ring.CheckInvariants(); err != nil {
			return nil, fmt.Errorf("decode gossip state: %w: %w", ErrMalformed, err)
		}
	}
	return &st, nil
}

func encodeRange(kind byte, r address.Range) []byte {
	var buf bytes.Buffer
	buf.WriteByte(kind)
	if err := gob.NewEncoder(&buf).Encode(r); err != nil {
		panic(fmt.Sprintf("encode range: %v", err))
	}
	return buf.Bytes()
}

func decodeRange(payload []byte) (address.Range, error) {
	var r address.Range
	if err := checkGob(payload); err != nil {
		return r, fmt.Errorf("decode range (%d bytes): %w: %w", len(payload), ErrMalformed, err)
	}
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&r); err != nil {
		return r, fmt.Errorf("decode range (%d bytes): %w: %w", len(payload), ErrMalformed, err)
	}
	if r.End <= r.Start {
		return r, fmt.Errorf("decode range %s: %w: empty range", r, ErrMalformed)
	}
	return r, nil
}

func encodeUnicastState(st *gossipState) []byte {
	return append([]byte{msgRingUpdate}, encodeState(st)...)
}

// gossipData is what the allocator hands to mesh: a full-state snapshot.
// Merging keeps the newer snapshot, since each one is complete.
type gossipData struct{ payload []byte }

var _ mesh.GossipData = gossipData{}

func (g gossipData) Encode() [][]byte { return [][]byte{g.payload} }

func (g gossipData) Merge(other mesh.GossipData) mesh.GossipData {
	if o, ok := other.(gossipData); ok {
		return o
	}
	return g
}
