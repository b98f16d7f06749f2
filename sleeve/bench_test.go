package sleeve

import (
	"testing"
)

func BenchmarkSealFrame1400(b *testing.B) {
	enc := NewEncoder(peerA, &testKey, true, true)
	b.ReportAllocs()
	b.SetBytes(int64(len(testFrame)))
	for b.Loop() {
		enc.Begin()
		enc.Append(peerA, peerB, testFrame)
		_ = enc.Seal()
	}
}

func BenchmarkOpenDeframe1400(b *testing.B) {
	enc := NewEncoder(peerA, &testKey, true, true)
	dgrams := make([][]byte, 1024)
	for i := range dgrams {
		enc.Begin()
		enc.Append(peerA, peerB, testFrame)
		dgrams[i] = append([]byte(nil), enc.Seal()...)
	}
	plain := make([]byte, 65536)
	b.ReportAllocs()
	b.SetBytes(int64(len(testFrame)))
	o := NewOpener(&testKey, true)
	i := 0
	for b.Loop() {
		if i == len(dgrams) {
			// Sequence numbers repeat: reset the replay state, not timed.
			b.StopTimer()
			o = NewOpener(&testKey, true)
			i = 0
			b.StartTimer()
		}
		p, err := o.Open(plain, dgrams[i])
		if err != nil {
			b.Fatal(err)
		}
		it := NewFrameIter(p)
		for it.Next() {
		}
		i++
	}
}

func BenchmarkPlainEncodeDecode1400(b *testing.B) {
	enc := NewEncoder(peerA, nil, false, false)
	b.ReportAllocs()
	b.SetBytes(int64(len(testFrame)))
	for b.Loop() {
		enc.Begin()
		enc.Append(peerA, peerB, testFrame)
		it := NewFrameIter(enc.Seal()[NameSize:])
		for it.Next() {
		}
	}
}
