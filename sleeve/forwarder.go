package sleeve

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/seedf75a49c6/weave/router"
	"github.com/weaveworks/mesh"
)

// Special frame lengths and control-message tags (Weave 2.8.1 sleeve).
const (
	heartbeatLen    = ethHeaderLen + 8
	fragTestLen     = 60001
	pmtuDiscoverLen = 60000
	initialMTU      = 65535
	minMTU          = 552

	// TagConnectionEstablished acknowledges the first heartbeat.
	TagConnectionEstablished byte = 1
	// TagFragmentationReceived acknowledges a fragmentation test frame.
	TagFragmentationReceived byte = 2
	// TagPMTUVerified acknowledges an MTU probe; body = uint16 BE mtu.
	TagPMTUVerified byte = 3
)

// ErrHeartbeatTimeout is sent on ErrorChannel when the remote stops
// sending heartbeats.
var ErrHeartbeatTimeout = errors.New("no sleeve heartbeat received")

// event kinds fed to the forwarder goroutine.
const (
	evHeartbeat    = iota + 1 // valid heartbeat received: ack once
	evFragTest                // fragmentation test received
	evProbe                   // MTU probe received (n = frame length)
	evPMTURestart             // DF send hit EMSGSIZE
	evEstablished             // control: ConnectionEstablished
	evFragReceived            // control: FragmentationReceived
	evPMTUVerified            // control: PMTUVerified (n = mtu)
)

type event struct {
	kind int
	n    int
}

// counters are the per-forwarder statistics.
type counters struct {
	TxFrames, TxDatagrams, TxErrors, TxDropped, TooBig, Fragments, Segments atomic.Uint64
	RxFrames, RxDatagrams, RxDropped, RxReplays, RxAuthFailed               atomic.Uint64
	TxBytes, RxBytes                                                        atomic.Uint64 // UDP payload bytes
}

// forwarder is one sleeve connection to a remote peer.
type forwarder struct {
	o      *Overlay
	params mesh.OverlayConnectionParams
	remote mesh.PeerName
	log    *slog.Logger
	timing Timing
	opener *Opener  // receive goroutine only; nil without a session key
	frag   struct { // IP fragmentation buffer
		sync.Mutex
		buf []byte
	}
	cipher    Cipher // negotiated cipher (with a session key)
	jumboMTU  int    // overlay MTU with jumbo framing
	peerJumbo bool   // both ends offer JumboFeature
	peerSeg   bool   // both ends offer SegmentsFeature, and an AEAD if encrypted

	dfCh, nonDFCh channel
	segCh         struct { // segmented framing's sender (SegmentsFeature)
		sync.Mutex
		enc *segEncoder
		oob gsoControl
	}
	reasm reassembly // segmented framing's receiver; receive goroutine only

	remoteAddr  atomic.Pointer[netip.AddrPort]
	mtu         atomic.Int32
	established atomic.Bool
	stackFrag   atomic.Bool
	jumbo       atomic.Bool // jumbo framing in use: peerJumbo && stackFrag
	seg         atomic.Bool // segmented framing in use: peerSeg, the path MTU verified, GSO sends work
	acked       atomic.Bool // we sent ConnectionEstablished
	confirmed   atomic.Bool
	cnt         counters

	events chan event
	// kicks are the kinds (bits 1<<kind) of kick events not yet handled:
	// each is a flag, so a burst of heartbeats costs one wake-up and a
	// once-only control message (ConnectionEstablished) is never lost to
	// a full events channel. kickCh wakes the forwarder goroutine.
	kicks  atomic.Uint32
	kickCh chan struct{}
	estCh  chan struct{}
	errCh  chan error
	stop   chan struct{}
	life   struct { // serialises Confirm and Stop
		sync.Mutex
		stopped bool
	}
	wg sync.WaitGroup
}

var _ router.Forwarder = (*forwarder)(nil)

func newForwarder(o *Overlay, p mesh.OverlayConnectionParams) (*forwarder, error) {
	f := &forwarder{
		o: o, params: p, remote: p.RemotePeer.Name, timing: o.cfg.Timing,
		events: make(chan event, 64),
		kickCh: make(chan struct{}, 1),
		estCh:  make(chan struct{}),
		errCh:  make(chan error, 1),
		stop:   make(chan struct{}),
	}
	f.log = o.log.With("peer", f.remote.String(), "conn", p.ConnUID)
	f.frag.buf = make([]byte, 65536)
	f.mtu.Store(initialMTU)
	f.jumboMTU = JumboMTU(p.SessionKey != nil)
	f.peerJumbo = !o.cfg.NoJumbo && p.Features[JumboFeature] == "1"
	if err := f.initCrypto(o.cfg.LocalPeer, p); err != nil {
		return nil, err
	}
	if p.Outbound && p.RemoteAddr != nil {
		if ip, ok := netip.AddrFromSlice(p.RemoteAddr.IP); ok {
			ap := netip.AddrPortFrom(ip.Unmap(), uint16(p.RemoteAddr.Port))
			f.remoteAddr.Store(&ap)
		}
	}
	return f, nil
}

// initCrypto chooses the cipher (secretbox unless both ends offer an
// AEAD) and creates the two channels' encoders and the opener.
func (f *forwarder) initCrypto(local mesh.PeerName, p mesh.OverlayConnectionParams) error {
	if p.SessionKey != nil {
		f.cipher = chooseCipher(f.o.ciphers, p.Features[CipherFeature])
	}
	df, err := NewEncoderCipher(local, p.SessionKey, f.cipher, p.Outbound, true)
	if err != nil {
		return err
	}
	nonDF, err := NewEncoderCipher(local, p.SessionKey, f.cipher, p.Outbound, false)
	if err != nil {
		return err
	}
	f.dfCh = channel{enc: df, df: true}
	f.nonDFCh = channel{enc: nonDF}
	if p.SessionKey != nil {
		if f.opener, err = NewOpenerCipher(p.SessionKey, f.cipher, !p.Outbound); err != nil {
			return err
		}
	}
	// Segmented framing seals every segment in place, which secretbox
	// cannot; an encrypted link without an AEAD keeps jumbo framing.
	f.peerSeg = f.o.offersSegments() && p.Features[SegmentsFeature] == "1" &&
		(p.SessionKey == nil || f.cipher != CipherSecretbox)
	if f.peerSeg {
		var a cipher.AEAD
		if p.SessionKey != nil {
			if a, err = newAEAD(f.cipher, p.SessionKey); err != nil {
				return err
			}
		}
		f.segCh.enc = newSegEncoder(local, a, p.Outbound)
	}
	return nil
}

// Confirm implements mesh.OverlayConnection: start heartbeats. It is a
// no-op after Stop or a previous Confirm.
func (f *forwarder) Confirm() {
	f.life.Lock()
	defer f.life.Unlock()
	if f.life.stopped || f.confirmed.Load() {
		return
	}
	f.confirmed.Store(true)
	f.o.register(f)
	f.wg.Add(1)
	go f.run()
}

// EstablishedChannel implements mesh.OverlayConnection.
func (f *forwarder) EstablishedChannel() <-chan struct{} { return f.estCh }

// ErrorChannel implements mesh.OverlayConnection.
func (f *forwarder) ErrorChannel() <-chan error { return f.errCh }

// Stop implements mesh.OverlayConnection. Idempotent; joins the goroutine.
func (f *forwarder) Stop() {
	f.life.Lock()
	if f.life.stopped {
		f.life.Unlock()
		return
	}
	f.life.stopped = true
	close(f.stop)
	f.life.Unlock()
	f.wg.Wait()
	f.o.unregister(f)
}

// ControlMessage implements mesh.OverlayConnection.
func (f *forwarder) ControlMessage(tag byte, msg []byte) {
	switch tag {
	case TagConnectionEstablished:
		f.kick(evEstablished)
	case TagFragmentationReceived:
		f.kick(evFragReceived)
	case TagPMTUVerified:
		if len(msg) < 2 {
			f.log.Warn("short PMTUVerified control message", "len", len(msg))
			return
		}
		f.post(event{kind: evPMTUVerified, n: int(binary.BigEndian.Uint16(msg))})
	default:
		f.log.Warn("unknown sleeve control message", "tag", tag)
	}
}

// Attrs implements mesh.OverlayConnection.
func (f *forwarder) Attrs() map[string]any {
	a := map[string]any{"name": "sleeve", "mtu": f.overlayMTU()}
	switch {
	case f.seg.Load():
		a["segments"] = true
	case f.jumbo.Load():
		a["jumbo"] = true
	}
	return a
}

// overlayMTU is the largest inner IP packet the link carries now: a whole
// IP packet with segmented framing, jumbo framing's limit, or the path's.
func (f *forwarder) overlayMTU() int {
	switch {
	case f.seg.Load():
		return MaxSegmentedFrame - ethHeaderLen
	case f.jumbo.Load():
		return f.jumboMTU
	}
	return int(f.mtu.Load())
}

// kick flags an event of kind for the forwarder goroutine without
// blocking; flags of one kind coalesce, none is lost.
func (f *forwarder) kick(kind int) {
	f.kicks.Or(1 << kind)
	select {
	case f.kickCh <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// post hands an event with a value to the forwarder goroutine without
// blocking; these (probes, PMTUVerified) are retried by the PMTU
// discovery's timeouts, so dropping one when the queue is full is
// harmless.
func (f *forwarder) post(ev event) {
	select {
	case f.events <- ev:
	default:
	}
}

func (f *forwarder) fail(err error) {
	select {
	case f.errCh <- err:
	default:
	}
}

// overheadDF is what the path adds to an overlay IP packet: IP+UDP
// headers, datagram overhead, frame header and the inner Ethernet header.
func (f *forwarder) overheadDF() int {
	return f.ipUDPHeaders() + f.dfCh.enc.Overhead() + FrameOverhead + ethHeaderLen
}

// ipUDPHeaders is the underlay's IP+UDP header size towards the remote:
// 48 bytes over IPv6, 28 over IPv4 (also while the address is unknown).
func (f *forwarder) ipUDPHeaders() int {
	if ap := f.remoteAddr.Load(); ap != nil && !ap.Addr().Unmap().Is4() {
		return 40 + 8
	}
	return 20 + 8
}

// sendSpecial sends an all-zero special frame of n bytes ending in tail.
func (f *forwarder) sendSpecial(ch *channel, n int, tail []byte) error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.enc.Begin()
	if !ch.enc.AppendZero(f.o.cfg.LocalPeer, f.remote, n, tail) {
		return fmt.Errorf("encode special frame of %d bytes: %w", n, errFrameTooLong)
	}
	return f.writeLocked(ch, ch.enc.Seal())
}

func (f *forwarder) sendHeartbeat() {
	var uid [8]byte
	binary.BigEndian.PutUint64(uid[:], f.params.ConnUID)
	if err := f.sendSpecial(&f.dfCh, heartbeatLen, uid[:]); err != nil && !errors.Is(err, errNoRemoteAddr) {
		f.log.Debug("sleeve heartbeat send failed", "err", err)
	}
}

func (f *forwarder) sendControl(tag byte, body []byte) {
	if f.params.SendControlMessage == nil {
		return
	}
	if err := f.params.SendControlMessage(tag, body); err != nil {
		f.log.Debug("sleeve control message send failed", "tag", tag, "err", err)
	}
}
