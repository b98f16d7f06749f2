package sleeve

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/weaveworks/mesh"
)

// tokenHandler returns one token per received frame, without allocating.
type tokenHandler struct{ tokens chan struct{} }

func (h *tokenHandler) HandleForwarded(_, _ mesh.PeerName, _ []byte) {
	select {
	case <-h.tokens:
	default:
	}
}

// BenchmarkEndToEnd pushes frames from A to B over loopback UDP through two
// real overlays negotiated as two of our routers (the AEAD; jumbo framing,
// or segmented framing over a pretend 1500-byte path): Forward, encode,
// seal, send, receive, open, deframe or reassemble, handler. A window
// of 64 frames in flight keeps the sender from overrunning the receiver.
// It is the in-process harness for pprof:
//
//	go test -run '^$' -bench EndToEnd -cpuprofile cpu.out ./sleeve/
func BenchmarkEndToEnd(b *testing.B) {
	for _, v := range []struct {
		name             string
		noFast, segments bool
	}{{bestCipher().String() + "/segments", false, true}, {bestCipher().String() + "/jumbo", false, false},
		{CipherSecretbox.String() + "/jumbo", true, false}} {
		b.Run(v.name, func(b *testing.B) {
			forEachSize(b, func(b *testing.B, frame []byte) { benchEndToEnd(b, frame, v.noFast, v.segments) })
		})
	}
}

func benchEndToEnd(b *testing.B, frame []byte, noFastCipher, segments bool) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &tokenHandler{tokens: make(chan struct{}, 64)}
	cfg := func(name mesh.PeerName, hd *tokenHandler) Config {
		return Config{Host: "127.0.0.1", LocalPeer: name, Handler: hd, Logger: log, Timing: fastTiming,
			NoFastCipher: noFastCipher, NoSegments: !segments}
	}
	oa, err := New(cfg(peerA, &tokenHandler{tokens: make(chan struct{})}))
	if err != nil {
		b.Fatal(err)
	}
	defer oa.Stop()
	ob, err := New(cfg(peerB, h))
	if err != nil {
		b.Fatal(err)
	}
	defer ob.Stop()
	fa, fb := pairFeatures(b, oa, ob, &testKey, overlayFeatures(oa), overlayFeatures(ob))
	defer fa.Stop()
	defer fb.Stop()
	fa.Confirm()
	fb.Confirm()
	awaitClosed(b, fa.EstablishedChannel(), "A established")
	if segments {
		awaitSegments(b, fa)
		fa.(*forwarder).mtu.Store(int32(1500 - 28 - segOverhead(&testKey)))
	} else {
		awaitJumbo(b, fa)
	}
	lost := 0
	timeout := time.NewTimer(time.Second) // reused: time.After would allocate per frame
	defer timeout.Stop()
	for b.Loop() {
		timeout.Reset(time.Second)
		select {
		case h.tokens <- struct{}{}:
		case <-timeout.C: // frames were lost: start a new window
			lost += len(h.tokens)
			for len(h.tokens) > 0 {
				<-h.tokens
			}
			h.tokens <- struct{}{}
		}
		if err := fa.Forward(peerA, peerB, frame); err != nil {
			b.Fatal(err)
		}
	}
	if lost > 0 {
		b.Logf("%d frames lost", lost)
	}
}
