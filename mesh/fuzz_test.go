package mesh

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// Seed corpora come from the captured Weave 2.8.1 vectors.

func FuzzDecodeFraming(f *testing.F) {
	for _, v := range loadTCPVectors(f) {
		if v.Unit == "features" || v.Unit == "message" || v.Unit == "sealed-message" {
			f.Add(v.raw(f))
		}
	}
	f.Add([]byte{0x80, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		rest := data
		for len(rest) > 0 {
			body, next, err := DecodeFrame(rest)
			if err != nil {
				if !errors.Is(err, ErrShort) && !errors.Is(err, ErrTooBig) {
					t.Fatalf("unexpected error kind: %v", err)
				}
				return
			}
			again, err := EncodeFrame(body)
			if err != nil || !bytes.Equal(again, rest[:len(rest)-len(next)]) {
				t.Fatalf("frame does not re-encode: %v", err)
			}
			rest = next
		}
	})
}

func FuzzDecodeGossipEnvelope(f *testing.F) {
	for _, v := range loadTCPVectors(f) {
		if v.Unit == "message" && v.Channel != "" {
			body, _, err := DecodeFrame(v.raw(f))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(body[0], body[1:])
		}
	}
	f.Fuzz(func(t *testing.T, tag byte, payload []byte) {
		env, err := DecodeGossipEnvelope(tag, payload)
		if err != nil {
			return
		}
		b, err := EncodeGossipEnvelope(env)
		if err != nil {
			t.Fatalf("decoded envelope does not encode: %v", err)
		}
		env2, err := DecodeGossipEnvelope(tag, b)
		if err != nil || !reflect.DeepEqual(normEnv(env), normEnv(env2)) {
			t.Fatalf("round trip %+v -> %+v (%v)", env, env2, err)
		}
	})
}

func normEnv(e GossipEnvelope) GossipEnvelope {
	if len(e.Msg) == 0 {
		e.Msg = nil
	}
	return e
}

func FuzzDecodeTopology(f *testing.F) {
	for _, v := range loadTCPVectors(f) {
		if v.Channel == "topology" {
			body, _, err := DecodeFrame(v.raw(f))
			if err != nil {
				f.Fatal(err)
			}
			env, err := DecodeGossipEnvelope(body[0], body[1:])
			if err != nil {
				f.Fatal(err)
			}
			f.Add(env.Msg)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		peers, err := DecodeTopology(data)
		if err != nil {
			return
		}
		b, err := EncodeTopology(peers)
		if err != nil {
			t.Fatalf("decoded topology does not encode: %v", err)
		}
		again, err := DecodeTopology(b)
		if err != nil || !reflect.DeepEqual(again, peers) {
			t.Fatalf("round trip %+v -> %+v (%v)", peers, again, err)
		}
	})
}

func FuzzParseFeaturesLayout(f *testing.F) {
	for _, v := range loadTCPVectors(f) {
		if v.Unit == "features" {
			body, _, err := DecodeFrame(v.raw(f))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(body)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lay, m, err := ParseFeaturesLayout(data)
		if err != nil {
			return
		}
		b, err := EncodeFeaturesOrdered(m, lay)
		if err != nil {
			return // e.g. a type id below the user range
		}
		if !bytes.Equal(b, data) {
			t.Fatalf("layout parse/encode not inverse:\n got %x\nwant %x", b, data)
		}
		if gm, err := DecodeFeatures(data); err != nil || !reflect.DeepEqual(gm, m) {
			t.Fatalf("encoding/gob disagrees: %v %v vs %v", gm, err, m)
		}
	})
}
