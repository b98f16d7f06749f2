package sleeve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/testutil"
	"github.com/seedf75a49c6/weave/router"
	"github.com/weaveworks/mesh"
)

type rxFrame struct {
	src, dst mesh.PeerName
	frame    []byte
}

// fakeHandler records forwarded frames on a channel.
type fakeHandler struct{ ch chan rxFrame }

var _ router.FrameHandler = (*fakeHandler)(nil)

func newFakeHandler() *fakeHandler { return &fakeHandler{ch: make(chan rxFrame, 64)} }

func (h *fakeHandler) HandleForwarded(src, dst mesh.PeerName, frame []byte) {
	select {
	case h.ch <- rxFrame{src, dst, bytes.Clone(frame)}:
	default:
	}
}

func (h *fakeHandler) await(t *testing.T) rxFrame {
	t.Helper()
	select {
	case f := <-h.ch:
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for a forwarded frame")
		return rxFrame{}
	}
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(&tLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tLogWriter struct{ t *testing.T }

func (w *tLogWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimSpace(p)))
	return len(p), nil
}

var fastTiming = Timing{
	FastHeartbeat:    5 * time.Millisecond,
	SlowHeartbeat:    50 * time.Millisecond,
	HeartbeatTimeout: 10 * time.Second,
	MTUVerifyTimeout: 5 * time.Millisecond,
}

func newTestOverlay(t *testing.T, name mesh.PeerName, h router.FrameHandler, timing Timing) *Overlay {
	t.Helper()
	o, err := New(Config{Host: "127.0.0.1", LocalPeer: name, Handler: h, Logger: testLogger(t), Timing: timing})
	if err != nil {
		t.Fatalf("new overlay: %v", err)
	}
	t.Cleanup(o.Stop)
	return o
}

// checkGoroutines fails the test if goroutines started during it are
// still running once it ends (Stop must join everything).
func checkGoroutines(t *testing.T) { testutil.CheckGoroutines(t, 3*time.Second) }

// pair wires two forwarders over loopback with an in-memory control channel.
func pair(t *testing.T, oa, ob *Overlay, key *[32]byte) (fa, fb router.Forwarder) {
	t.Helper()
	return pairFeatures(t, oa, ob, key, nil, nil)
}

// pairFeatures is pair with the connection features each side received
// from the other: featB is what B advertised (A's forwarder sees it).
func pairFeatures(t testing.TB, oa, ob *Overlay, key *[32]byte, featA, featB map[string]string) (fa, fb router.Forwarder) {
	t.Helper()
	var pa, pb atomic.Pointer[router.Forwarder]
	send := func(dst *atomic.Pointer[router.Forwarder]) func(byte, []byte) error {
		return func(tag byte, msg []byte) error {
			if f := dst.Load(); f != nil {
				(*f).ControlMessage(tag, bytes.Clone(msg))
			}
			return nil
		}
	}
	const uid = 0x93b847133847c07a
	fa, err := oa.PrepareConnection(mesh.OverlayConnectionParams{
		RemotePeer: &mesh.Peer{Name: ob.cfg.LocalPeer}, Outbound: true, ConnUID: uid, SessionKey: key, Features: featB,
		RemoteAddr:         &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: ob.Port()},
		SendControlMessage: send(&pb),
	})
	if err != nil {
		t.Fatal(err)
	}
	fb, err = ob.PrepareConnection(mesh.OverlayConnectionParams{
		RemotePeer: &mesh.Peer{Name: oa.cfg.LocalPeer}, Outbound: false, ConnUID: uid, SessionKey: key, Features: featA,
		RemoteAddr:         &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000},
		SendControlMessage: send(&pa),
	})
	if err != nil {
		t.Fatal(err)
	}
	pa.Store(&fa)
	pb.Store(&fb)
	return fa, fb
}

func awaitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// awaitAttr polls Attrs (the MTU and the framing have no change event)
// until key has the value want.
func awaitAttr(t testing.TB, f interface{ Attrs() map[string]any }, key string, want any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.Attrs()[key] != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s %v, want %v (attrs %v)", key, f.Attrs()[key], want, f.Attrs())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// awaitMTU waits until the MTU settles at want.
func awaitMTU(t *testing.T, f router.Forwarder, want int) { t.Helper(); awaitAttr(t, f, "mtu", want) }

func TestLoopbackPair(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  *[32]byte
	}{{"plaintext", nil}, {"encrypted", &testKey}} {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			ha, hb := newFakeHandler(), newFakeHandler()
			oa := newTestOverlay(t, peerA, ha, fastTiming)
			ob := newTestOverlay(t, peerB, hb, fastTiming)
			fa, fb := pair(t, oa, ob, tc.key)
			if err := fa.Forward(peerA, peerB, testFrame); !errors.Is(err, router.ErrCannotForward) {
				t.Fatalf("Forward before established: %v", err)
			}
			fa.Confirm()
			fb.Confirm()
			awaitClosed(t, fa.EstablishedChannel(), "A established")
			awaitClosed(t, fb.EstablishedChannel(), "B established")

			// Loopback MTU is 65536: the 60000-byte discovery probe is accepted.
			awaitMTU(t, fa, pmtuDiscoverLen-ethHeaderLen)
			awaitMTU(t, fb, pmtuDiscoverLen-ethHeaderLen)

			frame := ipv4Frame(1400, true, 0)
			if err := fa.Forward(peerA, peerB, frame); err != nil {
				t.Fatalf("A forward: %v", err)
			}
			got := hb.await(t)
			if got.src != peerA || got.dst != peerB || !bytes.Equal(got.frame, frame) {
				t.Fatalf("B received %v->%v %d bytes", got.src, got.dst, len(got.frame))
			}
			if err := fb.Forward(peerB, peerA, testFrame); err != nil {
				t.Fatalf("B forward: %v", err)
			}
			if got := ha.await(t); got.src != peerB || !bytes.Equal(got.frame, testFrame) {
				t.Fatalf("A received %v %d bytes", got.src, len(got.frame))
			}
			var tooBig *router.FrameTooBigError
			if err := fa.Forward(peerA, peerB, ipv4Frame(61000, true, 0)); !errors.As(err, &tooBig) || tooBig.MTU != 59986 {
				t.Fatalf("oversized DF frame: %v", err)
			}
			st := oa.Status()
			if len(st.Peers) != 1 || !st.Peers[0].Established || st.Peers[0].RemoteAddr == "" ||
				st.Peers[0].Encrypted != (tc.key != nil) || st.Peers[0].Counters.TxFrames == 0 {
				t.Fatalf("diagnostics %+v", st)
			}
			if addr := ob.Status().Peers[0].RemoteAddr; addr != net.JoinHostPort("127.0.0.1", strconv.Itoa(oa.Port())) {
				t.Fatalf("inbound side learned %q, want A's sleeve port %d", addr, oa.Port())
			}
			sendGarbage(t, ob.Port())
			txBefore, rxBefore := st.Peers[0].Counters.TxBytes, ob.Status().Peers[0].Counters.RxBytes
			if err := fa.Forward(peerA, peerB, frame); err != nil {
				t.Fatalf("A forward after garbage: %v", err)
			}
			if got := hb.await(t); !bytes.Equal(got.frame, frame) {
				t.Fatal("frame after garbage differs")
			}
			// The frame's datagram is counted in bytes at both ends (with
			// its sleeve header; heartbeats may add more).
			min := uint64(NameSize + FrameOverhead + len(frame))
			if sent := oa.Status().Peers[0].Counters.TxBytes - txBefore; sent < min {
				t.Errorf("A counted %d bytes sent for a %d-byte frame, want >= %d", sent, len(frame), min)
			}
			if recv := ob.Status().Peers[0].Counters.RxBytes - rxBefore; recv < min {
				t.Errorf("B counted %d bytes received for a %d-byte frame, want >= %d", recv, len(frame), min)
			}
			stB := ob.Status()
			if stB.RxGarbage == 0 || stB.Peers[0].Counters.RxDropped+stB.Peers[0].Counters.RxAuthFailed == 0 {
				t.Fatalf("garbage not counted: %+v", stB)
			}
			fa.Stop()
			fb.Stop()
			fa.Stop() // idempotent
		})
	}
}

// sendGarbage sends a too-short datagram and a malformed one that names
// peer A as its sender, then returns once B has read them (the receive
// loop is FIFO, so the frame forwarded next arrives after them).
func sendGarbage(t *testing.T, port int) {
	t.Helper()
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bad := append([]byte{0xaa, 0, 0, 0, 0, 1}, bytes.Repeat([]byte{0xff}, 40)...)
	for _, d := range [][]byte{{1, 2, 3}, bad} {
		if _, err := c.Write(d); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHeartbeatTimeoutAndUnknownSender(t *testing.T) {
	checkGoroutines(t)
	timing := fastTiming
	timing.HeartbeatTimeout = 50 * time.Millisecond
	oa := newTestOverlay(t, peerA, newFakeHandler(), timing)
	ob := newTestOverlay(t, peerB, newFakeHandler(), timing)
	fa, _ := pair(t, oa, ob, nil) // B's side is never confirmed
	fa.Confirm()
	select {
	case err := <-fa.ErrorChannel():
		if !errors.Is(err, ErrHeartbeatTimeout) {
			t.Fatalf("error %v, want ErrHeartbeatTimeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no heartbeat timeout error")
	}
	if ob.Status().RxUnknownPeer == 0 {
		t.Fatal("B should count A's heartbeats as from an unconfirmed sender")
	}
	fa.Stop()
}

// TestForwardChannels checks Forward's choice of channel and its own
// fragmentation, reading the datagrams on a plain UDP socket; the
// encrypted header's DF bit tells which channel was used.
func TestForwardChannels(t *testing.T) {
	checkGoroutines(t)
	o := newTestOverlay(t, peerA, newFakeHandler(), fastTiming)
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	fw, err := o.PrepareConnection(mesh.OverlayConnectionParams{
		RemotePeer: &mesh.Peer{Name: peerB}, Outbound: true, ConnUID: 1, SessionKey: &testKey,
		RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sink.LocalAddr().(*net.UDPAddr).Port},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Stop()
	f := fw.(*forwarder)
	f.established.Store(true)
	f.mtu.Store(1000)
	opener := NewOpener(&testKey, true)
	buf, plain := make([]byte, 65536), make([]byte, 65536)
	read := func() (df bool, frame []byte) {
		t.Helper()
		sink.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := sink.Read(buf)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		h, _ := ParseSealed(buf[:n])
		p, err := opener.Open(plain, buf[:n])
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		it := NewFrameIter(p)
		if !it.Next() {
			t.Fatalf("no frame: %v", it.Err())
		}
		return h.DF, bytes.Clone(it.Frame)
	}
	mustForward := func(frame []byte) {
		t.Helper()
		if err := fw.Forward(peerA, peerB, frame); err != nil {
			t.Fatalf("forward: %v", err)
		}
	}
	mustForward(ipv4Frame(900, true, 0))
	if df, _ := read(); !df {
		t.Fatal("DF frame that fits must use the DF channel")
	}
	mustForward(testFrame) // not IPv4
	if df, _ := read(); df {
		t.Fatal("non-IPv4 frame must use the non-DF channel")
	}
	mustForward(ipv4Frame(900, false, 0))
	if df, _ := read(); !df {
		t.Fatal("non-DF frame that fits must use the DF channel while fragmentation is untested")
	}
	big := ipv4Frame(2500, false, 8)
	mustForward(big)
	var payload []byte
	for i, wantLen := range []int{20 + 976, 20 + 976, 20 + 528} {
		df, fr := read()
		ip := fr[ethHeaderLen:]
		fl := binary.BigEndian.Uint16(ip[6:])
		if !df || len(ip) != wantLen || int(binary.BigEndian.Uint16(ip[2:])) != wantLen ||
			int(fl&ipOffsetMask)*8 != 8+976*i || (fl&ipFlagMF != 0) != (i < 2) || ipChecksum(ip[:20]) != 0 {
			t.Fatalf("fragment %d: df %v len %d flags %#x", i, df, len(ip), fl)
		}
		payload = append(payload, ip[20:]...)
	}
	if !bytes.Equal(payload, big[ethHeaderLen+20:]) {
		t.Fatal("fragments do not reassemble to the original payload")
	}
	f.stackFrag.Store(true)
	mustForward(big)
	if df, fr := read(); df || !bytes.Equal(fr, big) {
		t.Fatal("with stackFrag a big non-DF frame goes whole on the non-DF channel")
	}
}

func TestConfirmAfterStopIsInert(t *testing.T) {
	checkGoroutines(t)
	oa := newTestOverlay(t, peerA, newFakeHandler(), fastTiming)
	ob := newTestOverlay(t, peerB, newFakeHandler(), fastTiming)
	fa, _ := pair(t, oa, ob, nil)
	fa.Stop()
	fa.Confirm()
	if st := oa.Status(); len(st.Peers) != 0 {
		t.Fatalf("stopped forwarder still listed: %+v", st.Peers)
	}
	oa.mu.RLock()
	n := len(oa.mu.byPeer)
	oa.mu.RUnlock()
	if n != 0 {
		t.Fatal("stopped forwarder registered by Confirm")
	}
	oa.Stop()
	oa.Stop() // idempotent
}

// TestInboundFollowsNATRebinding sends a valid heartbeat for the inbound
// forwarder from a new source port: the forwarder must adopt it.
func TestInboundFollowsNATRebinding(t *testing.T) {
	checkGoroutines(t)
	oa := newTestOverlay(t, peerA, newFakeHandler(), fastTiming)
	ob := newTestOverlay(t, peerB, newFakeHandler(), fastTiming)
	fa, fb := pair(t, oa, ob, nil)
	fa.Confirm()
	fb.Confirm()
	awaitClosed(t, fb.EstablishedChannel(), "B established")
	fa.Stop() // no more heartbeats from A's real port
	nat, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: ob.Port()})
	if err != nil {
		t.Fatal(err)
	}
	defer nat.Close()
	enc := NewEncoder(peerA, nil, true, true)
	enc.Begin()
	var uid [8]byte
	binary.BigEndian.PutUint64(uid[:], fb.(*forwarder).params.ConnUID)
	enc.AppendZero(peerA, peerB, heartbeatLen, uid[:])
	if _, err := nat.Write(enc.Seal()); err != nil {
		t.Fatal(err)
	}
	want := nat.LocalAddr().String()
	deadline := time.Now().Add(5 * time.Second)
	for ob.Status().Peers[0].RemoteAddr != want {
		if time.Now().After(deadline) {
			t.Fatalf("remote address %q, want %q", ob.Status().Peers[0].RemoteAddr, want)
		}
		time.Sleep(time.Millisecond) // polling: no event for address changes
	}
	fb.Stop()
}
