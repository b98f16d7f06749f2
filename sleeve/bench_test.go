package sleeve

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/weaveworks/mesh"
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

// BenchmarkForward measures the whole send path (decide, encode, seal,
// sendto) of an established encrypted forwarder to a UDP sink.
func BenchmarkForward(b *testing.B) {
	o, err := New(Config{Host: "127.0.0.1", LocalPeer: peerA, Handler: newFakeHandler(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Stop()
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	fw, err := o.PrepareConnection(mesh.OverlayConnectionParams{
		RemotePeer: &mesh.Peer{Name: peerB}, Outbound: true, ConnUID: 1, SessionKey: &testKey,
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sink.LocalAddr().(*net.UDPAddr).Port},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer fw.Stop()
	f := fw.(*forwarder)
	f.established.Store(true)
	f.mtu.Store(1438)
	frame := ipv4Frame(1400, true, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := fw.Forward(peerA, peerB, frame); err != nil {
			b.Fatal(err)
		}
	}
	if n := f.cnt.TxErrors.Load(); n > 0 {
		b.Logf("%d send errors (sink buffer full is expected)", n)
	}
}
