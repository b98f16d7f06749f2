package sleeve

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/testutil"
	"github.com/weaveworks/mesh"
)

// batchSink is a forwarder of a fresh overlay towards a plain UDP socket
// (no UDP_GRO: the kernel hands it a GSO run's datagrams one by one, as a
// Weave 2.8.1 peer gets them), established, path MTU 1400.
func batchSink(t *testing.T, key *[32]byte) (*Overlay, *forwarder, *net.UDPConn) {
	t.Helper()
	o := newTestOverlay(t, peerA, newFakeHandler(), fastTiming)
	if !o.socks.gso {
		t.Fatal("this kernel takes no UDP GSO sends: batching cannot be tested")
	}
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.SetReadBuffer(4 << 20); err != nil {
		t.Fatal(err)
	}
	fw, err := o.PrepareConnection(mesh.OverlayConnectionParams{
		RemotePeer: &mesh.Peer{Name: peerB}, Outbound: true, ConnUID: 1, SessionKey: key,
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sink.LocalAddr().(*net.UDPAddr).Port},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fw.Stop)
	f := fw.(*forwarder)
	f.established.Store(true)
	f.mtu.Store(1400)
	return o, f, sink
}

// sinkReader reads datagrams from sink and returns each one's frame and,
// encrypted, its sequence number (replay-checked by an Opener).
func sinkReader(t *testing.T, sink *net.UDPConn, key *[32]byte) func() (seq uint64, frame []byte) {
	var opener *Opener
	if key != nil {
		opener = NewOpener(key, true)
	}
	buf, plain := make([]byte, 65536), make([]byte, 65536)
	return func() (uint64, []byte) {
		t.Helper()
		sink.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := sink.Read(buf)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		d, seq := buf[NameSize:n], uint64(0)
		if key != nil {
			h, err := ParseSealed(buf[:n])
			if err != nil {
				t.Fatal(err)
			}
			if d, err = opener.Open(plain, buf[:n]); err != nil {
				t.Fatalf("open datagram %d: %v", h.Seq, err)
			}
			seq = h.Seq
		}
		it := NewFrameIter(d)
		if !it.Next() {
			t.Fatalf("no frame in a %d-byte datagram: %v", n, it.Err())
		}
		fr := bytes.Clone(it.Frame)
		if it.Next() || it.Err() != nil {
			t.Fatalf("more than one frame in a datagram (err %v)", it.Err())
		}
		return seq, fr
	}
}

// keyCases: a plaintext and an encrypted link.
var keyCases = []struct {
	name string
	key  *[32]byte
}{{"plain", nil}, {"encrypted", &testKey}}

// TestBatchedSendsKeepEveryDatagram: frames forwarded inside a batch are
// held back until it ends, then arrive as the same datagrams, in order,
// with consecutive sequence numbers, whatever their sizes: runs of equal
// ones, a shorter one closing a run, a longer one starting the next, more
// than one GSO send's worth, and one too long to batch at all.
func TestBatchedSendsKeepEveryDatagram(t *testing.T) {
	for _, tc := range keyCases {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			o, f, sink := batchSink(t, tc.key)
			read := sinkReader(t, sink, tc.key)
			var sizes []int
			add := func(n, size int) {
				for range n {
					sizes = append(sizes, size)
				}
			}
			add(10, 500)
			add(1, 300) // shorter: the run's last
			add(5, 500)
			add(1, 800) // longer: a new run
			add(3, 800)
			add(maxGSOSegments+6, 200) // more than one send takes
			add(1, 28)
			add(2, 1300)
			frames := make([][]byte, len(sizes))
			for i, n := range sizes {
				frames[i] = ipv4Frame(n, true, 0)
				frames[i][ethHeaderLen+20] = byte(i) // tell equal sizes apart
			}
			o.BeginBatch()
			for i, fr := range frames {
				if err := f.Forward(peerA, peerB, fr); err != nil {
					t.Fatalf("forward %d: %v", i, err)
				}
			}
			// Runs that could take no more have left; the last (the two
			// 1300-byte frames) waits for the batch to end.
			if sent := f.cnt.TxDatagrams.Load(); sent != uint64(len(frames)-2) {
				t.Fatalf("%d datagrams sent inside the batch, want %d (all but the open run)", sent, len(frames)-2)
			}
			o.EndBatch()
			for i, want := range frames {
				seq, got := read()
				if !bytes.Equal(got, want) {
					t.Fatalf("datagram %d: frame of %d bytes (first byte %d), want %d bytes (%d)",
						i, len(got), got[ethHeaderLen+20], len(want), want[ethHeaderLen+20])
				}
				if tc.key != nil && seq != uint64(i) {
					t.Fatalf("datagram %d has sequence number %d", i, seq)
				}
			}
			if got, want := f.cnt.TxDatagrams.Load(), uint64(len(frames)); got != want {
				t.Errorf("TxDatagrams %d, want %d", got, want)
			}
			if got, want := f.cnt.TxFrames.Load(), uint64(len(frames)); got != want {
				t.Errorf("TxFrames %d, want %d", got, want)
			}
			// Outside a batch a frame leaves at once (nothing else would send it).
			one := ipv4Frame(500, true, 0)
			if err := f.Forward(peerA, peerB, one); err != nil {
				t.Fatal(err)
			}
			if _, got := read(); !bytes.Equal(got, one) {
				t.Fatal("frame forwarded outside a batch did not arrive")
			}
		})
	}
}

// TestBatchEndRacingForwardLosesNothing: frames forwarded from one goroutine
// while another opens and closes batches all arrive, once the last batch has
// ended: a run is never left waiting for a batch that already ended.
func TestBatchEndRacingForwardLosesNothing(t *testing.T) {
	checkGoroutines(t)
	o, f, sink := batchSink(t, &testKey)
	read := sinkReader(t, sink, &testKey)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			o.BeginBatch()
			o.EndBatch()
		}
	}()
	const n = 2000
	frame := ipv4Frame(300, true, 0)
	for i := range n {
		if err := f.Forward(peerA, peerB, frame); err != nil {
			t.Fatalf("forward %d: %v", i, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	seen := make(map[uint64]bool, n)
	for range n {
		seq, _ := read()
		if seen[seq] {
			t.Fatalf("sequence number %d twice", seq)
		}
		seen[seq] = true
	}
}

// TestBatchedSendDoesNotAllocate: a batch of small frames, held back and
// sent as GSO runs, allocates nothing.
func TestBatchedSendDoesNotAllocate(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("allocation counts are not meaningful under -race (make test runs this in its race-free pass)")
	}
	for _, key := range []*[32]byte{nil, &testKey} {
		o, f, _ := batchSink(t, key)
		frame := ipv4Frame(200, true, 0)
		send := func() {
			o.BeginBatch()
			for range 20 {
				if err := f.Forward(peerA, peerB, frame); err != nil {
					t.Fatal(err)
				}
			}
			o.EndBatch()
		}
		send() // the run buffer and the pending list are made once
		if n := testing.AllocsPerRun(200, send); n != 0 {
			t.Fatalf("encrypted %v: %.1f allocations per batch of 20 frames, want 0", key != nil, n)
		}
	}
}

// TestBatchedRunsReachOurRouter: between two of our overlays (segmented
// framing negotiated, the receiver with UDP_GRO), the frames of
// a batch, runs of equal sizes and a short last, arrive whole and in order,
// and a frame sent as segments after one held back arrives after it.
func TestBatchedRunsReachOurRouter(t *testing.T) {
	for _, tc := range keyCases {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			hb := newFakeHandler()
			oa := newConfiguredOverlay(t, peerA, newFakeHandler(), Config{Timing: fastTiming})
			ob := newConfiguredOverlay(t, peerB, hb, Config{Timing: fastTiming})
			fa, fb := pairFeatures(t, oa, ob, tc.key, overlayFeatures(oa), overlayFeatures(ob))
			fa.Confirm()
			fb.Confirm()
			awaitClosed(t, fa.EstablishedChannel(), "A established")
			awaitSegments(t, fa)
			fa.(*forwarder).mtu.Store(int32(1500 - 28 - segOverhead(tc.key))) // bigger frames go as segments
			var frames [][]byte
			for i := range 50 {
				n := 1200
				if i == 29 || i == 49 {
					n = 90 // a short last closes a run
				}
				fr := ipv4Frame(n, true, 0)
				fr[ethHeaderLen+20] = byte(i)
				frames = append(frames, fr)
			}
			oa.BeginBatch()
			for i, fr := range frames {
				if err := fa.Forward(peerA, peerB, fr); err != nil {
					t.Fatalf("forward %d: %v", i, err)
				}
			}
			oa.EndBatch()
			// A frame sent as segments does not overtake one held back.
			small, big := ipv4Frame(300, true, 0), ipv4Frame(20000, true, 0)
			oa.BeginBatch()
			for _, fr := range [][]byte{small, big} {
				if err := fa.Forward(peerA, peerB, fr); err != nil {
					t.Fatal(err)
				}
			}
			oa.EndBatch()
			frames = append(frames, small, big)
			for i, want := range frames {
				if got := hb.await(t); !bytes.Equal(got.frame, want) {
					t.Fatalf("frame %d: %d bytes (tag %d), want %d", i, len(got.frame), got.frame[ethHeaderLen+20], len(want))
				}
			}
		})
	}
}

// evHandler records every forwarded frame as an event, beside the batch
// events of SetBatch.
type evHandler struct{ evs chan byte }

func (h *evHandler) HandleForwarded(_, _ mesh.PeerName, _ []byte) { h.evs <- 'f' }

// TestReceiveBatchBracketsEveryFrame: with SetBatch, every frame the
// receive loop hands on lies inside a begin/end pair of the injector's,
// pairs do not nest, and the last batch ends once the burst is drained.
func TestReceiveBatchBracketsEveryFrame(t *testing.T) {
	checkGoroutines(t)
	h := &evHandler{evs: make(chan byte, 4096)}
	oa := newConfiguredOverlay(t, peerA, newFakeHandler(), Config{Timing: fastTiming})
	ob := newConfiguredOverlay(t, peerB, h, Config{Timing: fastTiming})
	ob.SetBatch(func() { h.evs <- 'b' }, func() { h.evs <- 'e' })
	fa, fb := pairFeatures(t, oa, ob, &testKey, overlayFeatures(oa), overlayFeatures(ob))
	fa.Confirm()
	fb.Confirm()
	awaitClosed(t, fa.EstablishedChannel(), "A established")
	awaitSegments(t, fa)
	const n = 200
	frame := ipv4Frame(600, true, 0)
	oa.BeginBatch() // runs of up to 64: GRO receives of many datagrams
	for range n {
		if err := fa.Forward(peerA, peerB, frame); err != nil {
			t.Fatal(err)
		}
	}
	oa.EndBatch()
	open, frames := false, 0
	deadline := time.After(10 * time.Second)
	for frames < n || open {
		select {
		case e := <-h.evs:
			switch {
			case e == 'b' && open:
				t.Fatal("begin inside an open batch")
			case e == 'e' && !open:
				t.Fatal("end without a begin")
			case e == 'f' && !open:
				t.Fatalf("frame %d handled outside a batch", frames)
			}
			switch e {
			case 'b', 'e':
				open = e == 'b'
			case 'f':
				frames++
			}
		case <-deadline:
			t.Fatalf("after 10s: %d of %d frames, batch open %v", frames, n, open)
		}
	}
}
