package sleeve

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/router"
	"github.com/weaveworks/mesh"
)

func TestJumboMTU(t *testing.T) {
	if got := JumboMTU(false); got != 65473 {
		t.Errorf("plaintext jumbo MTU %d, want 65473 (65507-6-14-14)", got)
	}
	if got := JumboMTU(true); got != 65449 {
		t.Errorf("encrypted jumbo MTU %d, want 65449 (65507-30-14-14)", got)
	}
	e := NewEncoder(peerA, &testKey, true, false)
	if !e.Append(peerA, peerB, make([]byte, JumboMTU(true)+ethHeaderLen)) {
		t.Fatal("a JumboMTU frame must fit one datagram")
	}
	if d := e.Seal(); len(d) != MaxUDPPayload {
		t.Fatalf("sealed jumbo datagram is %d bytes, want exactly %d", len(d), MaxUDPPayload)
	}
}

// overlayFeatures returns what o advertises.
func overlayFeatures(o *Overlay) map[string]string {
	f := map[string]string{}
	o.AddFeaturesTo(f)
	return f
}

// awaitJumbo waits until jumbo framing is on.
func awaitJumbo(t testing.TB, f router.Forwarder) { t.Helper(); awaitAttr(t, f, "jumbo", true) }

// TestJumboNegotiation: jumbo framing is used only when both ends offer
// it, and then carries a 64 KiB frame whole (encrypted) in both
// directions; otherwise Weave's PMTU limit and FrameTooBig stay.
func TestJumboNegotiation(t *testing.T) {
	for _, tc := range []struct {
		name           string
		noJumboA, noJB bool
		noFastCipherA  bool
		want           bool
		wantCipher     Cipher
	}{
		{"both offer", false, false, false, true, bestCipher()},
		{"A declines", true, false, false, false, bestCipher()},
		{"B declines", false, true, false, false, bestCipher()},
		{"A secretbox only", false, false, true, true, CipherSecretbox},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			ha, hb := newFakeHandler(), newFakeHandler()
			oa := newJumboOverlay(t, peerA, ha, Config{NoJumbo: tc.noJumboA, NoFastCipher: tc.noFastCipherA})
			ob := newJumboOverlay(t, peerB, hb, Config{NoJumbo: tc.noJB})
			if _, offered := overlayFeatures(oa)[JumboFeature]; offered == tc.noJumboA {
				t.Fatalf("A offers jumbo = %v with NoJumbo %v", offered, tc.noJumboA)
			}
			fa, fb := pairFeatures(t, oa, ob, &testKey, overlayFeatures(oa), overlayFeatures(ob))
			defer fa.Stop()
			defer fb.Stop()
			fa.Confirm()
			fb.Confirm()
			awaitClosed(t, fa.EstablishedChannel(), "A established")
			awaitClosed(t, fb.EstablishedChannel(), "B established")
			for _, o := range []*Overlay{oa, ob} {
				if c := o.Status().Peers[0].Cipher; c != tc.wantCipher.String() {
					t.Fatalf("cipher %q, want %q", c, tc.wantCipher)
				}
			}
			big := ipv4Frame(JumboMTU(true), true, 0)
			if !tc.want {
				awaitMTU(t, fa, pmtuDiscoverLen-ethHeaderLen)
				var tooBig *router.FrameTooBigError
				if err := fa.Forward(peerA, peerB, big); !errors.As(err, &tooBig) || tooBig.MTU != 59986 {
					t.Fatalf("64 KiB DF frame without jumbo: %v, want FrameTooBig 59986", err)
				}
				if oa.Status().Peers[0].PeerJumbo {
					t.Fatal("PeerJumbo set although one side declined")
				}
				return
			}
			awaitJumbo(t, fa)
			awaitJumbo(t, fb)
			for _, d := range []struct {
				f        router.Forwarder
				src, dst mesh.PeerName
				h        *fakeHandler
			}{{fa, peerA, peerB, hb}, {fb, peerB, peerA, ha}} {
				if err := d.f.Forward(d.src, d.dst, big); err != nil {
					t.Fatalf("forward 64 KiB frame: %v", err)
				}
				if got := d.h.await(t); !bytes.Equal(got.frame, big) {
					t.Fatalf("64 KiB frame arrived as %d bytes or corrupted", len(got.frame))
				}
			}
			var tooBig *router.FrameTooBigError
			if err := fa.Forward(peerA, peerB, ipv4Frame(JumboMTU(true)+1, true, 0)); !errors.As(err, &tooBig) ||
				tooBig.MTU != JumboMTU(true) {
				t.Fatalf("DF frame over JumboMTU: %v, want FrameTooBig %d", err, JumboMTU(true))
			}
			st := oa.Status().Peers[0]
			if !st.Jumbo || st.MTU != JumboMTU(true) || st.Counters.TxDatagrams == 0 {
				t.Fatalf("diagnostics %+v", st)
			}
		})
	}
}

// bestCipher is what two default overlays on this machine agree on.
func bestCipher() Cipher {
	if hasAESHardware() {
		return CipherAES256GCM
	}
	return CipherChaCha20Poly1305
}

// newJumboOverlay is newTestOverlay with the knobs of cfg; segmented
// framing is declined (it would take over the frames jumbo tests send).
func newJumboOverlay(t *testing.T, name mesh.PeerName, h router.FrameHandler, cfg Config) *Overlay {
	t.Helper()
	cfg.NoSegments = true
	return newConfiguredOverlay(t, name, h, cfg)
}

// newConfiguredOverlay is newTestOverlay with the knobs of cfg.
func newConfiguredOverlay(t *testing.T, name mesh.PeerName, h router.FrameHandler, cfg Config) *Overlay {
	t.Helper()
	cfg.Host, cfg.LocalPeer, cfg.Handler, cfg.Logger = "127.0.0.1", name, h, testLogger(t)
	if cfg.Timing == (Timing{}) {
		cfg.Timing = fastTiming
	}
	o, err := New(cfg)
	if err != nil {
		t.Fatalf("new overlay: %v", err)
	}
	t.Cleanup(o.Stop)
	return o
}

// TestJumboRetriesLostFragTest: the first FragmentationReceived reply is
// lost; towards a jumbo-capable peer the test is re-sent (FragTestRetry)
// instead of waiting for FragTestInterval, so jumbo framing still comes on.
func TestJumboRetriesLostFragTest(t *testing.T) {
	checkGoroutines(t)
	timing := fastTiming
	timing.FragTestInterval = time.Hour
	timing.FragTestRetry = 20 * time.Millisecond
	oa := newJumboOverlay(t, peerA, newFakeHandler(), Config{Timing: timing})
	ob := newJumboOverlay(t, peerB, newFakeHandler(), Config{Timing: timing})
	var fa, fb router.Forwarder
	var mu sync.Mutex
	dropped := 0
	toA := func(tag byte, msg []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if tag == TagFragmentationReceived && dropped == 0 {
			dropped++
			return nil
		}
		if fa != nil {
			fa.ControlMessage(tag, bytes.Clone(msg))
		}
		return nil
	}
	toB := func(tag byte, msg []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if fb != nil {
			fb.ControlMessage(tag, bytes.Clone(msg))
		}
		return nil
	}
	pa, err := oa.PrepareConnection(mesh.OverlayConnectionParams{
		RemotePeer: &mesh.Peer{Name: peerB}, Outbound: true, ConnUID: 7, Features: overlayFeatures(ob),
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: ob.Port()}, SendControlMessage: toB,
	})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := ob.PrepareConnection(mesh.OverlayConnectionParams{
		RemotePeer: &mesh.Peer{Name: peerA}, ConnUID: 7, Features: overlayFeatures(oa),
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, SendControlMessage: toA,
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	fa, fb = pa, pb
	mu.Unlock()
	defer pa.Stop()
	defer pb.Stop()
	pa.Confirm()
	pb.Confirm()
	awaitJumbo(t, pa)
	mu.Lock()
	defer mu.Unlock()
	if dropped != 1 {
		t.Fatalf("dropped %d FragmentationReceived replies, want 1", dropped)
	}
}
