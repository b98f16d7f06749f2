package sleeve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/testutil"
	"github.com/weaveworks/mesh"
)

// segRecords cuts frame into segment records of at most capa data bytes,
// as fill lays them out (without the datagram header).
func segRecords(src, dst mesh.PeerName, id uint32, frame []byte, capa int) [][]byte {
	var recs [][]byte
	for off := 0; off < len(frame); off += capa {
		end := min(off+capa, len(frame))
		r := make([]byte, segHeaderLen+end-off)
		putSegHeader(r, segHeader{src: src, dst: dst, id: id, off: off, total: len(frame)})
		copy(r[segHeaderLen:], frame[off:end])
		recs = append(recs, r)
	}
	return recs
}

func patterned(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

func TestReassembly(t *testing.T) {
	frame := patterned(10000)
	recs := segRecords(peerA, peerB, 1, frame, 1400)
	other := segRecords(peerA, peerB, 2, patterned(3000), 1400)
	type step struct {
		rec     []byte
		frame   bool  // a frame comes out
		wantErr error // nil, errSegOrder or errSegBadHeader
	}
	mutate := func(rec []byte, at int, v uint32) []byte {
		r := bytes.Clone(rec)
		binary.BigEndian.PutUint32(r[at:], v)
		return r
	}
	inOrder := func() []step {
		var s []step
		for i, r := range recs {
			s = append(s, step{rec: r, frame: i == len(recs)-1})
		}
		return s
	}
	otherSrc := bytes.Clone(recs[1])
	PutPeerName(otherSrc, peerC)
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"in order", inOrder()},
		{"middle lost", []step{{rec: recs[0]}, {rec: recs[2], wantErr: errSegOrder}, {rec: recs[3], wantErr: errSegOrder}}},
		{"new frame replaces an unfinished one", append([]step{{rec: recs[0]}, {rec: recs[1]},
			{rec: other[0], wantErr: errSegOrder}, {rec: other[1]}}, step{rec: other[2], frame: true})},
		{"continuation with no frame begun", []step{{rec: recs[3], wantErr: errSegOrder}}},
		{"duplicate segment", []step{{rec: recs[0]}, {rec: recs[1]}, {rec: recs[1], wantErr: errSegOrder}}},
		{"other source mid-frame", []step{{rec: recs[0]}, {rec: otherSrc, wantErr: errSegOrder}}},
		{"total changes mid-frame", []step{{rec: recs[0]}, {rec: mutate(recs[1], 22, 20000), wantErr: errSegOrder}}},
		{"offset past total", []step{{rec: mutate(recs[0], 18, 9990), wantErr: errSegBadHeader}}},
		{"total over the largest frame", []step{{rec: mutate(recs[0], 22, MaxSegmentedFrame+1), wantErr: errSegBadHeader}}},
		{"zero total", []step{{rec: mutate(recs[0], 22, 0), wantErr: errSegBadHeader}}},
		{"no data", []step{{rec: recs[0][:segHeaderLen], wantErr: errSegBadHeader}}},
		{"not a segment", []step{{rec: recs[0][:segHeaderLen-1], wantErr: errSegBadHeader}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r reassembly
			for i, s := range tc.steps {
				got, src, dst, err := r.add(s.rec)
				if (s.wantErr == nil) != (err == nil) || (s.wantErr != nil && !errors.Is(err, s.wantErr)) {
					t.Fatalf("step %d: err %v, want %v", i, err, s.wantErr)
				}
				if (got != nil) != s.frame {
					t.Fatalf("step %d: frame %v, want %v", i, got != nil, s.frame)
				}
				if got != nil {
					want := frame
					if tc.name != "in order" {
						want = patterned(3000)
					}
					if !bytes.Equal(got, want) || src != peerA || dst != peerB {
						t.Fatalf("step %d: frame of %d bytes %v->%v, want %d bytes %v->%v", i, len(got), src, dst, len(want), peerA, peerB)
					}
				}
			}
		})
	}
}

// TestSegEncoderRoundTrip: fill lays out runs of equal segments (the last
// of a frame shorter) that each open on their own, in the segment channel's
// sequence space, and reassemble into the frame; a replayed segment is
// refused.
func TestSegEncoderRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  *[32]byte
	}{{"plaintext", nil}, {"aead", &testKey}} {
		t.Run(tc.name, func(t *testing.T) {
			var op *Opener
			var enc *segEncoder
			if tc.key != nil {
				a, err := newAEAD(bestCipher(), tc.key)
				if err != nil {
					t.Fatal(err)
				}
				enc = newSegEncoder(peerA, a, true)
				if op, err = NewOpenerCipher(tc.key, bestCipher(), true); err != nil {
					t.Fatal(err)
				}
			} else {
				enc = newSegEncoder(peerA, nil, true)
			}
			const segSize = 1472
			for _, n := range []int{1500, 4096, 65535 + ethHeaderLen, MaxSegmentedFrame} {
				frame := patterned(n)
				id := enc.begin()
				var r reassembly
				var out []byte
				var last []byte
				runs := 0
				for off := 0; off < len(frame); {
					run, next := enc.fill(peerA, peerB, id, frame, off, segSize)
					if len(run) > MaxUDPPayload || (len(run)+segSize-1)/segSize > maxGSOSegments {
						t.Fatalf("run of %d bytes does not fit one GSO send", len(run))
					}
					if next < len(frame) && len(run)%segSize != 0 {
						t.Fatalf("run of %d bytes ends in a short segment before the frame's end", len(run))
					}
					runs++
					for s := 0; s < len(run); s += segSize {
						d := bytes.Clone(run[s:min(s+segSize, len(run))])
						if len(d) != segSize && s+segSize < len(run) {
							t.Fatalf("segment of %d bytes inside a run", len(d))
						}
						if PeerNameAt(d) != peerA {
							t.Fatal("segment does not name its sender")
						}
						var f []byte
						var err error
						if op != nil {
							if h, _ := ParseSealed(d); !h.Seg || h.DF {
								t.Fatalf("segment sealed on channel DF=%v Seg=%v", h.DF, h.Seg)
							}
							last = bytes.Clone(d)
							f, err = openInto(&r, op, d)
						} else {
							f, _, _, err = r.add(d[NameSize:])
						}
						if err != nil {
							t.Fatalf("reassemble: %v", err)
						}
						if f != nil {
							out = bytes.Clone(f)
						}
					}
					off = next
				}
				if !bytes.Equal(out, frame) {
					t.Fatalf("%d-byte frame came back as %d bytes", n, len(out))
				}
				if want := (n + 65535) / 65536; runs < want {
					t.Fatalf("%d-byte frame in %d runs", n, runs)
				}
				if op != nil {
					if err := op.OpenSegment(make([]byte, len(last)-sealedSegOverhead), last); !errors.Is(err, ErrReplay) {
						t.Fatalf("replayed segment: %v, want ErrReplay", err)
					}
					if _, err := op.Open(nil, last); !errors.Is(err, ErrAuth) {
						t.Fatalf("Open of a segment: %v, want ErrAuth (segments open only through OpenSegment)", err)
					}
				}
			}
		})
	}
}

// sealedSegOverhead is what an encrypted segment adds to its data.
const sealedSegOverhead = NameSize + SeqSize + segHeaderLen + 16

// openInto is the receive path for one encrypted segment: slot, open into
// it, commit.
func openInto(r *reassembly, op *Opener, d []byte) ([]byte, error) {
	h := parseSegHeader(d[NameSize+SeqSize:])
	slot, err := r.slot(h, len(d)-sealedSegOverhead)
	if err != nil {
		return nil, err
	}
	if err := op.OpenSegment(slot, d); err != nil {
		return nil, err
	}
	return r.commit(h, len(slot))
}

// TestForgedSegmentsCostNothing: segments that fail authentication, at the
// next offset or as a new frame's first segment, leave the frame in
// progress intact.
func TestForgedSegmentsCostNothing(t *testing.T) {
	a, err := newAEAD(bestCipher(), &testKey)
	if err != nil {
		t.Fatal(err)
	}
	enc := newSegEncoder(peerA, a, true)
	op, err := NewOpenerCipher(&testKey, bestCipher(), true)
	if err != nil {
		t.Fatal(err)
	}
	const segSize = 1472
	frame := patterned(20000)
	run, _ := enc.fill(peerA, peerB, enc.begin(), frame, 0, segSize)
	var segs [][]byte
	for s := 0; s < len(run); s += segSize {
		segs = append(segs, bytes.Clone(run[s:min(s+segSize, len(run))]))
	}
	forge := func(seg []byte, off int) []byte {
		d := bytes.Clone(seg)
		binary.BigEndian.PutUint32(d[NameSize+SeqSize+18:], uint32(off)) // header is authenticated
		binary.BigEndian.PutUint64(d[NameSize:], binary.BigEndian.Uint64(d[NameSize:])+1000)
		return d
	}
	var r reassembly
	var out []byte
	for i, seg := range segs {
		if i == 2 {
			next := r.next
			for _, bad := range [][]byte{forge(seg, 0), forge(seg, next)} {
				if _, err := openInto(&r, op, bad); !errors.Is(err, ErrAuth) {
					t.Fatalf("forged segment: %v, want ErrAuth", err)
				}
			}
		}
		f, err := openInto(&r, op, seg)
		if err != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
		if f != nil {
			out = f
		}
	}
	if !bytes.Equal(out, frame) {
		t.Fatalf("frame of %d bytes came back as %d bytes or corrupted", len(frame), len(out))
	}
}

// TestSegmentsNegotiation: segmented framing is used only when both ends
// offer it, and on an encrypted link only with an AEAD; otherwise the link
// falls back to jumbo framing. Frames bigger than the path MTU then cross
// as segments, smaller ones in Weave's framing.
func TestSegmentsNegotiation(t *testing.T) {
	probe := newConfiguredOverlay(t, peerC, newFakeHandler(), Config{Timing: fastTiming})
	if !probe.socks.gso {
		t.Fatal("this kernel has no UDP GSO/GRO (UDP_SEGMENT, UDP_GRO): segmented framing cannot be tested")
	}
	for _, tc := range []struct {
		name          string
		key           *[32]byte
		cfgA, cfgB    Config
		wantSegments  bool
		wantPeerOffer bool
	}{
		{"both offer, plaintext", nil, Config{}, Config{}, true, true},
		{"both offer, aead", &testKey, Config{}, Config{}, true, true},
		{"A declines", &testKey, Config{NoSegments: true}, Config{}, false, false},
		{"B declines", nil, Config{}, Config{NoSegments: true}, false, false},
		{"secretbox", &testKey, Config{NoFastCipher: true}, Config{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			ha, hb := newFakeHandler(), newFakeHandler()
			tc.cfgA.Timing, tc.cfgB.Timing = fastTiming, fastTiming
			oa := newConfiguredOverlay(t, peerA, ha, tc.cfgA)
			ob := newConfiguredOverlay(t, peerB, hb, tc.cfgB)
			fa, fb := pairFeatures(t, oa, ob, tc.key, overlayFeatures(oa), overlayFeatures(ob))
			fa.Confirm()
			fb.Confirm()
			awaitClosed(t, fa.EstablishedChannel(), "A established")
			awaitClosed(t, fb.EstablishedChannel(), "B established")
			if tc.wantSegments {
				awaitSegments(t, fa)
				awaitSegments(t, fb)
			} else {
				awaitJumbo(t, fa)
			}
			st := oa.Status().Peers[0]
			if st.PeerSegments != tc.wantPeerOffer || st.Segments != tc.wantSegments {
				t.Fatalf("A status %+v", st)
			}
			if !tc.wantSegments {
				fa.Stop()
				fb.Stop()
				return
			}
			// Loopback's path MTU is 64 KiB; pretend a 1500-byte underlay.
			fa.(*forwarder).mtu.Store(int32(1500 - 28 - segOverhead(tc.key)))
			small := ipv4Frame(1200, true, 0)
			big := ipv4Frame(65535, true, 0)
			for _, fr := range [][]byte{small, big, small} {
				if err := fa.Forward(peerA, peerB, fr); err != nil {
					t.Fatalf("forward %d bytes: %v", len(fr), err)
				}
				if got := hb.await(t); !bytes.Equal(got.frame, fr) || got.src != peerA || got.dst != peerB {
					t.Fatalf("B received %d bytes, want the %d-byte frame intact", len(got.frame), len(fr))
				}
			}
			st = oa.Status().Peers[0]
			if st.Counters.Segments < 45 || st.Counters.Fragments != 0 || st.MTU != 65535 {
				t.Fatalf("A status %+v: want >= 45 segments, no fragments, MTU 65535", st)
			}
			if c := ob.Status().Peers[0].Counters; c.RxFrames != 3 || c.RxDropped != 0 || c.RxAuthFailed != 0 {
				t.Fatalf("B counters %+v", c)
			}
			fa.Stop()
			fb.Stop()
		})
	}
}

// segOverhead is what a path-MTU frame adds to an inner IP packet inside
// one datagram: the frame header, the Ethernet header and the datagram's
// own overhead.
func segOverhead(key *[32]byte) int {
	if key != nil {
		return FrameOverhead + ethHeaderLen + SealedOverhead
	}
	return FrameOverhead + ethHeaderLen + PlainOverhead
}

// awaitSegments waits until segmented framing is on.
func awaitSegments(t testing.TB, f interface{ Attrs() map[string]any }) {
	t.Helper()
	awaitAttr(t, f, "segments", true)
}

func FuzzReassembly(f *testing.F) {
	for _, r := range segRecords(peerA, peerB, 9, patterned(3000), 1000) {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		var r reassembly
		for _, in := range [][]byte{rec, segRecords(peerA, peerB, 9, patterned(3000), 1000)[1], rec} {
			frame, _, _, err := r.add(in)
			if frame != nil && len(frame) != int(binary.BigEndian.Uint32(in[22:])) {
				t.Fatalf("frame of %d bytes from a record saying %d", len(frame), binary.BigEndian.Uint32(in[22:]))
			}
			if err == nil && frame == nil && !r.active {
				t.Fatal("accepted a record without a frame in progress")
			}
		}
	})
}

// TestSegmentedFrameDoesNotAllocate: sending a 64 KiB frame as segments and
// reassembling it on the far side allocates nothing (both goroutines count).
func TestSegmentedFrameDoesNotAllocate(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("allocation counts are not meaningful under -race (make test runs this in its race-free pass)")
	}
	h := &tokenHandler{tokens: make(chan struct{}, 1)}
	oa := newConfiguredOverlay(t, peerA, &tokenHandler{tokens: make(chan struct{})}, Config{Timing: fastTiming})
	ob := newConfiguredOverlay(t, peerB, h, Config{Timing: fastTiming})
	fa, fb := pairFeatures(t, oa, ob, &testKey, overlayFeatures(oa), overlayFeatures(ob))
	fa.Confirm()
	fb.Confirm()
	awaitClosed(t, fa.EstablishedChannel(), "A established")
	awaitSegments(t, fa)
	fa.(*forwarder).mtu.Store(int32(1500 - 28 - segOverhead(&testKey)))
	frame := ipv4Frame(65535, true, 0)
	send := func() {
		h.tokens <- struct{}{}
		if err := fa.Forward(peerA, peerB, frame); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(h.tokens) > 0 { // the handler takes the token when the frame is in
			if time.Now().After(deadline) {
				t.Fatal("frame not reassembled within 5s")
			}
			runtime.Gosched()
		}
	}
	send() // the first segment allocates the replay window and reassembly buffer
	if n := testing.AllocsPerRun(200, send); n != 0 {
		t.Fatalf("%.1f allocations per segmented frame, want 0", n)
	}
	fa.Stop()
	fb.Stop()
}
