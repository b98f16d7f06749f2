//go:build linux

package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/vishvananda/netlink"
)

// testEtherType is the IEEE local experimental EtherType, so test frames are
// told apart from IPv6 noise (router solicitations, MLD) on the veths.
const testEtherType = 0x88b5

// vethPair creates a veth pair, both ends up, in a fresh test namespace and
// returns the namespace path and the two names.
func vethPair(t testing.TB) (nsPath, a, b string) {
	t.Helper()
	_, nsPath = netnstest.NewNS(t)
	a, b = netns.RandomName("ca"), netns.RandomName("cb")
	err := netns.Do(nsPath, func() error {
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a}, PeerName: b}
		if err := netlink.LinkAdd(veth); err != nil {
			return err
		}
		for _, n := range []string{a, b} {
			l, err := netlink.LinkByName(n)
			if err != nil {
				return err
			}
			if err := netlink.LinkSetUp(l); err != nil {
				return err
			}
		}
		// Until linkwatch activates the qdisc (operstate UP), sent frames are dropped.
		for _, n := range []string{a, b} {
			if err := awaitOperUp(n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("create veth pair: %v", err)
	}
	return nsPath, a, b // the namespace's deletion removes the pair
}

// awaitOperUp polls (there is no cheap event) until ifname is operationally up.
func awaitOperUp(ifname string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := netlink.LinkByName(ifname)
		if err != nil {
			return err
		}
		if l.Attrs().OperState == netlink.OperUp {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not up after 5s (operstate %s)", ifname, l.Attrs().OperState)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openIn opens a capture handle on ifname inside nsPath and closes it in Cleanup.
func openIn(t testing.TB, nsPath, ifname string) *Handle {
	t.Helper()
	var h *Handle
	err := netns.Do(nsPath, func() error {
		var err error
		h, err = Open(ifname)
		return err
	})
	if err != nil {
		t.Fatalf("open %s: %v", ifname, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// testFrame builds a broadcast frame carrying tag and seq.
func testFrame(tag byte, seq uint32) []byte {
	f := make([]byte, 60)
	copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, tag})
	binary.BigEndian.PutUint16(f[12:14], testEtherType)
	f[14] = tag
	binary.BigEndian.PutUint32(f[15:19], seq)
	return f
}

// collector runs h.Run in a goroutine and forwards copies of test frames.
func collector(t testing.TB, h *Handle) (<-chan []byte, <-chan error) {
	t.Helper()
	frames := make(chan []byte, 1024)
	done := make(chan error, 1)
	go func() {
		done <- h.Run(func(frame []byte) {
			if len(frame) >= 14 && binary.BigEndian.Uint16(frame[12:14]) == testEtherType {
				select {
				case frames <- bytes.Clone(frame):
				default:
				}
			}
		})
	}()
	t.Cleanup(func() {
		h.Close()
		<-done // the Run goroutine is joined before the test ends
	})
	return frames, done
}

func TestCaptureAcrossVeth(t *testing.T) {
	nsPath, a, b := vethPair(t)
	ha, hb := openIn(t, nsPath, a), openIn(t, nsPath, b)
	framesA, _ := collector(t, ha)
	framesB, _ := collector(t, hb)

	const n = 5
	for i := range uint32(n) {
		// Frames we inject on a must reach b but never come back on a.
		if err := ha.InjectFrame(testFrame('X', i)); err != nil {
			t.Fatalf("inject on %s: %v", a, err)
		}
	}
	for i := range uint32(n) {
		got := await(t, framesB)
		if want := testFrame('X', i); !bytes.Equal(got, want) {
			t.Fatalf("frame %d on %s = % x, want % x", i, b, got, want)
		}
	}
	// A marker sent from b after the X frames: if a had read back its own
	// frames they would be queued ahead of it.
	if err := hb.InjectFrame(testFrame('Y', 0)); err != nil {
		t.Fatalf("inject on %s: %v", b, err)
	}
	got := await(t, framesA)
	if got[14] != 'Y' {
		t.Fatalf("%s read back a frame it injected itself: % x", a, got[:20])
	}
	if st := ha.Stats(); st.PacketsReceived < 1 {
		t.Errorf("Stats on %s = %+v, want PacketsReceived >= 1", a, st)
	}
	if st := hb.Stats(); st.PacketsReceived < n {
		t.Errorf("Stats on %s = %+v, want PacketsReceived >= %d", b, st, n)
	}
}

func TestStatsAccumulate(t *testing.T) {
	nsPath, a, b := vethPair(t)
	ha, hb := openIn(t, nsPath, a), openIn(t, nsPath, b)
	frames, _ := collector(t, hb)
	for i := range uint32(3) {
		if err := ha.InjectFrame(testFrame('S', i)); err != nil {
			t.Fatal(err)
		}
		await(t, frames)
	}
	first := hb.Stats()
	second := hb.Stats() // the kernel resets on read; our counters must not
	if first.PacketsReceived < 3 || second.PacketsReceived < first.PacketsReceived {
		t.Fatalf("stats not accumulated: first %+v, second %+v", first, second)
	}
	hb.Close()
	if after := hb.Stats(); after.PacketsReceived < second.PacketsReceived {
		t.Fatalf("stats after Close %+v went below %+v", after, second)
	}
}

func TestCloseUnblocksRun(t *testing.T) {
	nsPath, a, _ := vethPair(t)
	h := openIn(t, nsPath, a)
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		done <- h.Run(func([]byte) {})
	}()
	<-started
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after Close returned %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run still blocked 5s after Close")
	}
	if err := h.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := h.InjectFrame(testFrame('Z', 0)); err == nil {
		t.Fatal("InjectFrame after Close succeeded")
	}
}

func TestOpenMissingInterface(t *testing.T) {
	netnstest.RequireRoot(t)
	if _, err := Open("nosuchif0"); err == nil {
		t.Fatal("Open of a missing interface succeeded")
	}
}

func await(t testing.TB, ch <-chan []byte) []byte {
	t.Helper()
	select {
	case f := <-ch:
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no frame within 5s")
		return nil
	}
}

// BenchmarkReadPath measures the capture read path (inject on one end, Run
// on the other); allocs/op should be 0.
func BenchmarkReadPath(b *testing.B) {
	nsPath, x, y := vethPair(b)
	hx, hy := openIn(b, nsPath, x), openIn(b, nsPath, y)
	got := make(chan struct{}, 1)
	count, target := 0, b.N
	done := make(chan error, 1)
	go func() {
		done <- hy.Run(func(frame []byte) {
			if binary.BigEndian.Uint16(frame[12:14]) != testEtherType {
				return
			}
			if count++; count == target {
				got <- struct{}{}
			}
		})
	}()
	b.Cleanup(func() { hy.Close(); <-done })
	frame := testFrame('B', 0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := hx.InjectFrame(frame); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		b.Logf("only %d of %d frames arrived (socket buffer drops)", count, b.N)
	}
}

// TestBatchBracketsEveryFrame: with SetBatch, every handled frame lies
// inside a begin/end pair (none is handled outside one, so nothing a handler
// holds back waits for a later frame), pairs never nest, a burst queued
// before Run starts comes in batches of at most maxBatch frames, and the
// last batch ends once the socket is drained, without a further frame.
func TestBatchBracketsEveryFrame(t *testing.T) {
	nsPath, a, b := vethPair(t)
	ha, hb := openIn(t, nsPath, a), openIn(t, nsPath, b)
	type ev struct {
		kind byte // 'b' begin, 'f' frame, 'e' end
		seq  uint32
	}
	evs := make(chan ev, 4096)
	hb.SetBatch(func() { evs <- ev{kind: 'b'} }, func() { evs <- ev{kind: 'e'} })
	const n = 100 // more than maxBatch
	for i := range uint32(n) {
		if err := ha.InjectFrame(testFrame('B', i)); err != nil {
			t.Fatalf("inject on %s: %v", a, err)
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- hb.Run(func(frame []byte) {
			if len(frame) >= 19 && binary.BigEndian.Uint16(frame[12:14]) == testEtherType {
				evs <- ev{kind: 'f', seq: binary.BigEndian.Uint32(frame[15:19])}
			}
		})
	}()
	t.Cleanup(func() { hb.Close(); <-done })
	open, inBatch, next, batches := false, 0, uint32(0), 0
	deadline := time.After(10 * time.Second)
	for next < n || open {
		select {
		case e := <-evs:
			switch e.kind {
			case 'b':
				if open {
					t.Fatal("begin inside an open batch")
				}
				open, inBatch = true, 0
				batches++
			case 'e':
				if !open {
					t.Fatal("end without a begin")
				}
				open = false
			case 'f':
				if !open {
					t.Fatalf("frame %d handled outside a batch", e.seq)
				}
				if e.seq != next {
					t.Fatalf("frame %d, want %d", e.seq, next)
				}
				next++
				if inBatch++; inBatch > maxBatch {
					t.Fatalf("batch of more than %d frames", maxBatch)
				}
			}
		case <-deadline:
			t.Fatalf("after 10s: %d of %d frames, batch open %v", next, n, open)
		}
	}
	if batches < 2 || batches > n/2 {
		t.Errorf("%d frames queued before Run came in %d batches, want 2 (maxBatch %d) to a few", n, batches, maxBatch)
	}
}

// TestBatchedInjects: frames injected inside a batch are held until it
// ends and then all arrive, in order, with frames too big to hold (written
// at once) and more frames than one sendmmsg takes among them; outside a
// batch a frame is written at once; InjectErrors stays 0.
func TestBatchedInjects(t *testing.T) {
	nsPath, a, b := vethPair(t)
	if err := netns.Do(nsPath, func() error { // room for the big frames
		for _, n := range []string{a, b} {
			l, err := netlink.LinkByName(n)
			if err != nil {
				return err
			}
			if err := netlink.LinkSetMTU(l, 65535); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ha, hb := openIn(t, nsPath, a), openIn(t, nsPath, b)
	framesB, _ := collector(t, hb)
	var want [][]byte
	for i := range uint32(3*maxInjectBatch + 5) {
		f := testFrame('I', i)
		if i%50 == 7 { // bigger than maxHeldFrame: written at once, after the held ones
			f = append(f, make([]byte, maxHeldFrame)...)
		}
		want = append(want, f)
	}
	ha.BeginBatch()
	ha.BeginBatch() // batches nest
	for i, f := range want[:10] {
		if err := ha.InjectFrame(f); err != nil {
			t.Fatalf("inject %d: %v", i, err)
		}
	}
	ha.EndBatch() // still inside the outer batch: frame 7 (big) alone has left
	got := await(t, framesB)
	if binary.BigEndian.Uint32(got[15:19]) != 0 {
		t.Fatalf("first frame on %s is %d: the held ones must leave before the big one", b, binary.BigEndian.Uint32(got[15:19]))
	}
	// Frames 0-6 were written when the big frame 7 came; 8 and 9 are held.
	for i := 1; i < 8; i++ {
		if g := await(t, framesB); !bytes.Equal(g, want[i]) {
			t.Fatalf("frame %d: % x", i, g[:20])
		}
	}
	for i, f := range want[10:] {
		if err := ha.InjectFrame(f); err != nil {
			t.Fatalf("inject %d: %v", 10+i, err)
		}
	}
	ha.EndBatch()
	for i := 8; i < len(want); i++ {
		if g := await(t, framesB); !bytes.Equal(g, want[i]) {
			t.Fatalf("frame %d of %d: got seq %d, %d bytes", i, len(want), binary.BigEndian.Uint32(g[15:19]), len(g))
		}
	}
	if err := ha.InjectFrame(testFrame('J', 0)); err != nil {
		t.Fatal(err)
	}
	if g := await(t, framesB); g[14] != 'J' {
		t.Fatal("a frame injected outside a batch did not arrive")
	}
	if n := ha.InjectErrors(); n != 0 {
		t.Errorf("InjectErrors = %d", n)
	}
}
