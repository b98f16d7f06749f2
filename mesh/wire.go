package mesh

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"github.com/seedf75a49c6/weave/internal/gobwire"
	"io"

	wmesh "github.com/weaveworks/mesh"
)

// Protocol constants of the mesh TCP protocol as spoken by Weave Net 2.8.1.
const (
	// ProtocolMagic opens every TCP connection, followed by the sender's
	// minimum and maximum protocol version (one byte each).
	ProtocolMagic = "weave"
	// ProtocolHeaderLen is len(ProtocolMagic) + 2 version bytes.
	ProtocolHeaderLen = len(ProtocolMagic) + 2
	// MaxTCPMsgSize is the largest V2 frame body a peer accepts.
	MaxTCPMsgSize = 10 * 1024 * 1024
	// PeerNameLen is the size of a "mac"-flavour peer name on the wire.
	PeerNameLen = 6
)

// Message tags: the first byte of a V2 frame body.
const (
	TagHeartbeat      byte = 0
	TagReserved1      byte = 1
	TagReserved2      byte = 2
	TagReserved3      byte = 3
	TagGossip         byte = 4
	TagGossipUnicast  byte = 5
	TagGossipBcast    byte = 6
	TagOverlayControl byte = 7
)

// Errors returned by the decoders; match with errors.Is.
var (
	ErrShort      = gobwire.ErrShort // truncated input
	ErrTooBig     = errors.New("frame exceeds maximum size")
	ErrBadHeader  = errors.New("protocol header not recognised")
	ErrBadTag     = errors.New("not a gossip tag")
	ErrTrailing   = errors.New("trailing bytes")
	ErrBadPeerLen = errors.New("peer name is not 6 bytes")
)

// EncodeProtocolHeader returns "weave" followed by minVersion, maxVersion.
func EncodeProtocolHeader(minVersion, maxVersion byte) []byte {
	return append([]byte(ProtocolMagic), minVersion, maxVersion)
}

// DecodeProtocolHeader parses the 7-byte protocol header.
func DecodeProtocolHeader(b []byte) (minVersion, maxVersion byte, err error) {
	if len(b) < ProtocolHeaderLen {
		return 0, 0, fmt.Errorf("decode protocol header (%d bytes): %w", len(b), ErrShort)
	}
	if string(b[:len(ProtocolMagic)]) != ProtocolMagic {
		return 0, 0, fmt.Errorf("decode protocol header %x: %w", b[:len(ProtocolMagic)], ErrBadHeader)
	}
	return b[len(ProtocolMagic)], b[len(ProtocolMagic)+1], nil
}

// EncodeFrame prepends the V2 length prefix (uint32 big-endian) to body.
func EncodeFrame(body []byte) ([]byte, error) {
	if len(body) > MaxTCPMsgSize {
		return nil, fmt.Errorf("encode frame of %d bytes: %w", len(body), ErrTooBig)
	}
	out := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(out, uint32(len(body)))
	return append(out, body...), nil
}

// DecodeFrame splits one V2 frame off the front of b, returning its body
// and the remaining bytes. It enforces MaxTCPMsgSize before looking at the
// body, like the mesh receiver.
func DecodeFrame(b []byte) (body, rest []byte, err error) {
	if len(b) < 4 {
		return nil, b, fmt.Errorf("decode frame length (%d bytes): %w", len(b), ErrShort)
	}
	n := binary.BigEndian.Uint32(b)
	if n > MaxTCPMsgSize {
		return nil, b, fmt.Errorf("decode frame of %d bytes: %w", n, ErrTooBig)
	}
	if uint64(len(b)-4) < uint64(n) {
		return nil, b, fmt.Errorf("decode frame body (%d of %d bytes): %w", len(b)-4, n, ErrShort)
	}
	return b[4 : 4+n], b[4+n:], nil
}

// GossipEnvelope is the payload of a tag 4 (gossip), 5 (unicast) or 6
// (broadcast) message: gob(channel string, src uint64 [, dst uint64],
// msg []byte), each value written by one fresh gob encoder.
type GossipEnvelope struct {
	Tag     byte
	Channel string
	Src     wmesh.PeerName
	Dst     wmesh.PeerName // only for TagGossipUnicast
	Msg     []byte
}

// IsGossipTag reports whether tag carries a GossipEnvelope.
func IsGossipTag(tag byte) bool {
	return tag == TagGossip || tag == TagGossipUnicast || tag == TagGossipBcast
}

// EncodeGossipEnvelope returns the payload (without tag byte) for env.
func EncodeGossipEnvelope(env GossipEnvelope) ([]byte, error) {
	if !IsGossipTag(env.Tag) {
		return nil, fmt.Errorf("encode gossip envelope tag %d: %w", env.Tag, ErrBadTag)
	}
	vals := []any{env.Channel, uint64(env.Src)}
	if env.Tag == TagGossipUnicast {
		vals = append(vals, uint64(env.Dst))
	}
	vals = append(vals, env.Msg)
	var buf bytes.Buffer
	enc := gob.NewEncoder(&buf)
	for _, v := range vals {
		if err := enc.Encode(v); err != nil {
			return nil, fmt.Errorf("encode gossip envelope %q: %w", env.Channel, err)
		}
	}
	return buf.Bytes(), nil
}

// DecodeGossipEnvelope decodes the payload (without tag byte) of a
// gossip message with the given tag. Trailing bytes are an error.
func DecodeGossipEnvelope(tag byte, payload []byte) (GossipEnvelope, error) {
	env := GossipEnvelope{Tag: tag}
	if !IsGossipTag(tag) {
		return env, fmt.Errorf("decode gossip envelope tag %d: %w", tag, ErrBadTag)
	}
	r := bytes.NewReader(payload)
	dec := gob.NewDecoder(r)
	var src, dst uint64
	targets := []any{&env.Channel, &src}
	if tag == TagGossipUnicast {
		targets = append(targets, &dst)
	}
	targets = append(targets, &env.Msg)
	for i, t := range targets {
		if err := dec.Decode(t); err != nil {
			return env, fmt.Errorf("decode gossip envelope value %d: %w", i, err)
		}
	}
	if r.Len() != 0 {
		return env, fmt.Errorf("decode gossip envelope %q: %d %w", env.Channel, r.Len(), ErrTrailing)
	}
	env.Src, env.Dst = wmesh.PeerName(src), wmesh.PeerName(dst)
	return env, nil
}

// DecodeFeatures decodes the gob map[string]string features message (the
// first framed message of a V2 connection).
func DecodeFeatures(b []byte) (map[string]string, error) {
	r := bytes.NewReader(b)
	var m map[string]string
	if err := gob.NewDecoder(r).Decode(&m); err != nil {
		return nil, fmt.Errorf("decode features: %w", err)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("decode features: %d %w", r.Len(), ErrTrailing)
	}
	return m, nil
}

// EncodeFeatures encodes m the way mesh does: one fresh gob encoder.
// Entry order is Go's random map order; see EncodeFeaturesOrdered for a
// deterministic encoding.
func EncodeFeatures(m map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(m); err != nil {
		return nil, fmt.Errorf("encode features: %w", err)
	}
	return buf.Bytes(), nil
}

// peerNameFromBytes converts a 6-byte big-endian name to a PeerName.
func peerNameFromBytes(b []byte) wmesh.PeerName {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return wmesh.PeerName(v)
}

// peerNameBytes is the 6-byte big-endian wire form of name.
func peerNameBytes(name wmesh.PeerName) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(name))
	return b[2:]
}

// errEOF reports whether err is the clean end of a gob stream.
func errEOF(err error) bool { return errors.Is(err, io.EOF) }
