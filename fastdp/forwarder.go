package fastdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seedf75a49c6/weave/router"
	"github.com/weaveworks/mesh"
)

// event kinds fed to the forwarder goroutine.
const (
	evRx  = iota + 1 // heartbeat of n bytes received over VXLAN
	evAck            // peer acknowledged our heartbeat of n bytes
)

type event struct {
	kind int
	n    int
}

// forwarder is the VXLAN link to one peer over one mesh connection.
//
// States (run goroutine): verifying -> usable <-> on hold. "Usable" needs
// a full-size heartbeat received and a full-size ack received, each within
// HeartbeatTimeout. Entering usable turns bridge learning on for the port;
// leaving it turns learning off and flushes the port's learned entries.
type forwarder struct {
	o      *Overlay
	log    *slog.Logger
	remote mesh.PeerName
	dev    string
	spec   VXLANSpec
	fdb    FDBEntry
	uid    uint64
	send   func(byte, []byte) error
	fullHB int  // 14 + MTU
	ipv6   bool // the link's underlay is IPv6 (outer packet = MTU + Overhead6)

	conn       atomic.Pointer[PacketConn]
	usable     atomic.Bool
	superseded atomic.Bool
	reason     atomic.Pointer[string]
	rtt        atomic.Int64 // ns, last heartbeat round trip (VXLAN out, ack back on the control channel); 0 = none yet
	rttAt      atomic.Int64 // unix ns when rtt was measured

	events   chan event
	estCh    chan struct{}
	errCh    chan error
	healthCh chan bool
	stop     chan struct{}
	life     struct {
		sync.Mutex
		confirmed, stopped bool
	}
	wg sync.WaitGroup

	st linkState // run goroutine only
}

// linkState is the heartbeat bookkeeping of the run goroutine.
type linkState struct {
	start                time.Time
	lastRx, lastAck      time.Time
	lastSmallAck         time.Time
	sentAt               time.Time // last heartbeats sent
	established, healthy bool
}

var (
	_ router.Forwarder      = (*forwarder)(nil)
	_ router.HealthNotifier = (*forwarder)(nil)
)

// DeviceName returns the vxw device name for a peer's short ID.
func DeviceName(peer mesh.PeerShortID) string {
	return fmt.Sprintf("%s%03x", DevicePrefix, uint16(peer)&0xfff)
}

// VNI returns the VNI of frames from src to dst: src | dst<<12, as Weave.
func VNI(src, dst mesh.PeerShortID) uint32 { return uint32(src)&0xfff | (uint32(dst)&0xfff)<<12 }

func newForwarder(o *Overlay, p mesh.OverlayConnectionParams, local, remote netip.Addr) *forwarder {
	us, them := o.cfg.LocalShortID(), p.RemotePeer.ShortID
	dev := DeviceName(them)
	f := &forwarder{
		o: o, remote: p.RemotePeer.Name, dev: dev, uid: p.ConnUID, send: p.SendControlMessage,
		fullHB:   hbHeaderLen + o.cfg.MTU,
		ipv6:     local.Is6(),
		spec:     VXLANSpec{Name: dev, Bridge: o.cfg.Bridge, VNI: VNI(them, us), Local: local, Port: o.cfg.Port, MTU: o.cfg.MTU},
		fdb:      FDBEntry{Dev: dev, Dst: remote, VNI: VNI(us, them)},
		events:   make(chan event, 64),
		estCh:    make(chan struct{}),
		errCh:    make(chan error, 1),
		healthCh: make(chan bool, 1),
		stop:     make(chan struct{}),
	}
	f.log = o.log.With("peer", f.remote.String(), "dev", dev, "conn", p.ConnUID)
	f.setReason(fmt.Sprintf("verifying VXLAN path (UDP %d)", o.cfg.Port))
	return f
}

// Confirm implements mesh.OverlayConnection: it creates the device and
// starts heartbeats. A failure is reported on ErrorChannel.
func (f *forwarder) Confirm() {
	f.life.Lock()
	defer f.life.Unlock()
	if f.life.stopped || f.life.confirmed {
		return
	}
	f.life.confirmed = true
	conn, err := f.setupDevice()
	if err != nil {
		f.setReason(err.Error())
		f.errCh <- err
		return
	}
	f.conn.Store(&conn)
	f.wg.Add(2)
	go f.run()
	go f.receive(conn)
}

// portClosed are the flags of a port that must carry nothing.
var portClosed = PortFlags{Isolated: true}

func (f *forwarder) setupDevice() (PacketConn, error) {
	if err := f.o.claim(f); err != nil {
		return nil, fmt.Errorf("claim vxlan device %s: %w", f.dev, err)
	}
	k := f.o.k
	if err := k.DelLink(f.dev); err != nil {
		return nil, err
	}
	if err := k.AddVXLAN(f.spec); err != nil {
		return nil, err
	}
	if err := k.SetPort(f.dev, portClosed); err != nil {
		return nil, err
	}
	if err := k.AppendFDB(f.fdb); err != nil {
		return nil, err
	}
	return k.OpenPacket(f.dev)
}

// supersede is called when a newer connection to the same peer took the
// device over: this forwarder stops using it.
func (f *forwarder) supersede() {
	f.superseded.Store(true)
	f.setReason(errSuperseded.Error())
	f.usable.Store(false)
	if c := f.conn.Load(); c != nil {
		_ = (*c).Close()
	}
}

// EstablishedChannel implements mesh.OverlayConnection: closed once the
// path is verified in both directions.
func (f *forwarder) EstablishedChannel() <-chan struct{} { return f.estCh }

// ErrorChannel implements mesh.OverlayConnection.
func (f *forwarder) ErrorChannel() <-chan error { return f.errCh }

// HealthChannel implements router.HealthNotifier.
func (f *forwarder) HealthChannel() <-chan bool { return f.healthCh }

// Stop implements mesh.OverlayConnection: it stops heartbeats and deletes
// the device (unless a newer connection owns it). Idempotent.
func (f *forwarder) Stop() {
	f.life.Lock()
	if f.life.stopped {
		f.life.Unlock()
		return
	}
	f.life.stopped = true
	close(f.stop)
	f.life.Unlock()
	f.usable.Store(false)
	if c := f.conn.Load(); c != nil {
		_ = (*c).Close()
	}
	f.wg.Wait()
	f.o.release(f)
}

// ControlMessage implements mesh.OverlayConnection.
func (f *forwarder) ControlMessage(tag byte, msg []byte) {
	if tag != tagHeartbeatAck || len(msg) < 2 {
		f.log.Warn("ignoring unknown vxlan control message", "tag", tag, "len", len(msg))
		return
	}
	f.post(event{kind: evAck, n: int(binary.BigEndian.Uint16(msg))})
}

func (f *forwarder) post(ev event) {
	select {
	case f.events <- ev:
	default:
	}
}

// Attrs implements mesh.OverlayConnection.
func (f *forwarder) Attrs() map[string]any {
	return map[string]any{"name": DisplayName, "mtu": f.o.cfg.MTU}
}

// FallbackReason returns why the link is not usable, or "" when it is.
func (f *forwarder) FallbackReason() string {
	if f.usable.Load() {
		return ""
	}
	if p := f.reason.Load(); p != nil {
		return *p
	}
	return "not verified"
}

func (f *forwarder) setReason(s string) { f.reason.Store(&s) }

func (f *forwarder) status() LinkStatus {
	return LinkStatus{
		Peer: f.remote.String(), Device: f.dev, VNIRx: f.spec.VNI, VNITx: f.fdb.VNI,
		Local: f.spec.Local.String(), Remote: f.fdb.Dst.String(), Usable: f.usable.Load(), Fallback: f.FallbackReason(),
		RTT: f.lastRTT(time.Now()),
	}
}

// lastRTT is the last heartbeat round trip, or 0 once no heartbeat has
// been acknowledged for the heartbeat timeout (the figure would be stale).
func (f *forwarder) lastRTT(now time.Time) time.Duration {
	if at := f.rttAt.Load(); at == 0 || now.Sub(time.Unix(0, at)) >= f.o.cfg.HeartbeatTimeout {
		return 0
	}
	return time.Duration(f.rtt.Load())
}

// Forward implements router.Forwarder. Only unicast frames captured here
// for the remote peer itself go over VXLAN (written into the device: the
// bridge has not learned the destination MAC on the vxw port yet);
// broadcasts, multicasts and relayed frames return ErrCannotForward so
// sleeve carries them along the mesh broadcast tree.
func (f *forwarder) Forward(srcPeer, dstPeer mesh.PeerName, frame []byte) error {
	if !f.usable.Load() || srcPeer != f.o.local || dstPeer != f.remote || len(frame) < hbHeaderLen || frame[0]&1 != 0 {
		return router.ErrCannotForward
	}
	if len(frame) > f.fullHB {
		if ipv4DF(frame) {
			return &router.FrameTooBigError{MTU: f.o.cfg.MTU}
		}
		return router.ErrCannotForward // sleeve fragments it
	}
	c := f.conn.Load()
	if c == nil || (*c).WriteFrame(frame) != nil {
		return router.ErrCannotForward
	}
	return nil
}

// ipv4DF reports whether frame is an IPv4 packet with DF set.
func ipv4DF(frame []byte) bool {
	return len(frame) > 20 && frame[12] == 0x08 && frame[13] == 0x00 && frame[20]&0x40 != 0
}

// receive reads heartbeats from the device until the socket is closed or
// fails (the link then goes on hold for lack of heartbeats).
func (f *forwarder) receive(c PacketConn) {
	defer f.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, err := c.ReadFrame(buf)
		if err != nil {
			select {
			case <-f.stop:
			default:
				if !f.superseded.Load() {
					f.log.Warn("vxlan heartbeat socket failed", "err", err)
				}
			}
			return
		}
		uid, size, err := parseHeartbeat(buf[:n])
		if err != nil || uid != f.uid {
			continue
		}
		f.post(event{kind: evRx, n: size})
	}
}

var errSuperseded = errors.New("superseded by a newer connection to the same peer")
