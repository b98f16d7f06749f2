package sleeve

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/weaveworks/mesh"
)

// benchSizes are the IP packet sizes of the hot-path benchmarks: a
// Weave-sized frame (1500-byte underlay, encrypted) and a jumbo one.
var benchSizes = []int{1400, JumboMTU(true)}

// forEachSize runs fn as a sub-benchmark per frame size, reporting bytes
// and allocations per frame (one op = one frame).
func forEachSize(b *testing.B, fn func(b *testing.B, frame []byte)) {
	for _, n := range benchSizes {
		frame := ipv4Frame(n, true, 0)
		b.Run(fmt.Sprintf("ip=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			fn(b, frame)
		})
	}
}

// benchCiphers are the ciphers of the crypto benchmarks.
var benchCiphers = []Cipher{CipherSecretbox, CipherAES256GCM, CipherChaCha20Poly1305}

// forEachCipherSize runs forEachSize under a sub-benchmark per cipher.
func forEachCipherSize(b *testing.B, fn func(b *testing.B, c Cipher, frame []byte)) {
	for _, c := range benchCiphers {
		b.Run(c.String(), func(b *testing.B) {
			forEachSize(b, func(b *testing.B, frame []byte) { fn(b, c, frame) })
		})
	}
}

// BenchmarkSealFrame is encrypt+frame: one frame into one sealed datagram.
func BenchmarkSealFrame(b *testing.B) {
	forEachCipherSize(b, func(b *testing.B, c Cipher, frame []byte) {
		enc, err := NewEncoderCipher(peerA, &testKey, c, true, true)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			enc.Begin()
			enc.Append(peerA, peerB, frame)
			_ = enc.Seal()
		}
	})
}

// BenchmarkOpenDeframe is decrypt+deframe, replay window included.
func BenchmarkOpenDeframe(b *testing.B) {
	forEachCipherSize(b, func(b *testing.B, c Cipher, frame []byte) {
		enc, err := NewEncoderCipher(peerA, &testKey, c, true, true)
		if err != nil {
			b.Fatal(err)
		}
		dgrams := make([][]byte, 64)
		for i := range dgrams {
			enc.Begin()
			enc.Append(peerA, peerB, frame)
			dgrams[i] = append([]byte(nil), enc.Seal()...)
		}
		// The AEADs decrypt in place: open a copy (timed, as the receive
		// loop's read is a copy too).
		d, plain := make([]byte, 65536), make([]byte, 65536)
		o, _ := NewOpenerCipher(&testKey, c, true)
		i := 0
		for b.Loop() {
			if i == len(dgrams) {
				// Sequence numbers repeat: reset the replay state, not timed.
				b.StopTimer()
				o, _ = NewOpenerCipher(&testKey, c, true)
				i = 0
				b.StartTimer()
			}
			p, err := o.Open(plain, d[:copy(d, dgrams[i])])
			if err != nil {
				b.Fatal(err)
			}
			it := NewFrameIter(p)
			for it.Next() {
			}
			i++
		}
	})
}

// BenchmarkPlainEncodeDecode is frame+deframe without crypto.
func BenchmarkPlainEncodeDecode(b *testing.B) {
	forEachSize(b, func(b *testing.B, frame []byte) {
		enc := NewEncoder(peerA, nil, false, false)
		for b.Loop() {
			enc.Begin()
			enc.Append(peerA, peerB, frame)
			it := NewFrameIter(enc.Seal()[NameSize:])
			for it.Next() {
			}
		}
	})
}

// BenchmarkForward measures the whole send path (decide, encode, seal,
// sendto) of an established encrypted forwarder to a UDP sink; the jumbo
// size runs with jumbo framing on.
func BenchmarkForward(b *testing.B) {
	o, err := New(Config{Host: "127.0.0.1", LocalPeer: peerA, Handler: newFakeHandler(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Stop()
	for _, c := range benchCiphers {
		b.Run(c.String(), func(b *testing.B) { benchForward(b, o, c) })
	}
}

func benchForward(b *testing.B, o *Overlay, c Cipher) {
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	fw, err := o.PrepareConnection(mesh.OverlayConnectionParams{
		RemotePeer: &mesh.Peer{Name: peerB}, Outbound: true, ConnUID: 1, SessionKey: &testKey,
		Features:   map[string]string{CipherFeature: c.String()},
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sink.LocalAddr().(*net.UDPAddr).Port},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer fw.Stop()
	f := fw.(*forwarder)
	f.established.Store(true)
	f.mtu.Store(1438)
	forEachSize(b, func(b *testing.B, frame []byte) {
		f.jumbo.Store(len(frame) > 1438+ethHeaderLen)
		for b.Loop() {
			if err := fw.Forward(peerA, peerB, frame); err != nil {
				b.Fatal(err)
			}
		}
	})
	if n := f.cnt.TxErrors.Load(); n > 0 {
		b.Logf("%d send errors (sink buffer full is expected)", n)
	}
}
