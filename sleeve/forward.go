package sleeve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/seedf75a49c6/weave/router"
	"github.com/weaveworks/mesh"
)

const (
	ethHeaderLen  = 14
	etherTypeIPv4 = 0x0800
	ipFlagDF      = 0x4000
	ipFlagMF      = 0x2000
	ipOffsetMask  = 0x1fff
)

var (
	errNoRemoteAddr = errors.New("remote UDP address not known yet")
	// errNoFamilySocket: the remote's address family has no sleeve socket
	// here (an IPv6 peer on a host without IPv6).
	errNoFamilySocket = errors.New("no sleeve socket of this address family")
	errFrameTooLong   = errors.New("frame does not fit a datagram")
)

// channel is one send stream (DF or non-DF) of a forwarder: an encoder
// with its own sequence counter; df picks the socket it writes to (of
// the remote address's family).
type channel struct {
	mu  sync.Mutex
	enc *Encoder
	df  bool
	run txRun // datagrams held back while a batch is open (batch.go)
}

// ipv4Header inspects an Ethernet frame; ok is false unless it carries a
// well-formed IPv4 header.
func ipv4Header(frame []byte) (ihl int, df, ok bool) {
	if len(frame) < ethHeaderLen+20 || binary.BigEndian.Uint16(frame[12:]) != etherTypeIPv4 {
		return 0, false, false
	}
	ip := frame[ethHeaderLen:]
	if ip[0]>>4 != 4 {
		return 0, false, false
	}
	ihl = int(ip[0]&0x0f) * 4
	if ihl < 20 || len(ip) < ihl {
		return 0, false, false
	}
	return ihl, binary.BigEndian.Uint16(ip[6:])&ipFlagDF != 0, true
}

// Forward implements router.Forwarder.
func (f *forwarder) Forward(src, dst mesh.PeerName, frame []byte) error {
	if !f.established.Load() {
		return router.ErrCannotForward
	}
	if f.seg.Load() && len(frame) > int(f.mtu.Load())+ethHeaderLen {
		if err := f.forwardSegmented(src, dst, frame); !errors.Is(err, errGSORefused) {
			return err
		}
	}
	if f.jumbo.Load() {
		return f.forwardJumbo(src, dst, frame)
	}
	mtu := int(f.mtu.Load())
	ihl, df, isIPv4 := ipv4Header(frame)
	fits := len(frame) <= mtu+ethHeaderLen
	switch {
	case isIPv4 && df && !fits:
		f.cnt.TooBig.Add(1)
		return &router.FrameTooBigError{MTU: mtu}
	case isIPv4 && df:
		return f.sendFrame(&f.dfCh, src, dst, frame)
	case !isIPv4 || f.stackFrag.Load():
		return f.sendFrame(&f.nonDFCh, src, dst, frame)
	case fits:
		return f.sendFrame(&f.dfCh, src, dst, frame)
	default:
		return f.fragment(&f.dfCh, src, dst, frame, ihl, mtu)
	}
}

// sendFrame encodes, seals and sends one frame on ch. Send failures are
// counted and logged at debug level but not returned: UDP is lossy and
// the router has nothing better to do with the frame.
func (f *forwarder) sendFrame(ch *channel, src, dst mesh.PeerName, frame []byte) error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.enc.Begin()
	if !ch.enc.Append(src, dst, frame) {
		f.cnt.TxDropped.Add(1)
		return nil
	}
	f.dataSent(ch, f.writeLocked(ch, ch.enc.Seal()))
	return nil
}

// dataSent reacts to the result of sending data: EMSGSIZE on the DF
// channel means the path MTU shrank, so discovery starts again.
func (f *forwarder) dataSent(ch *channel, err error) {
	if err != nil && ch == &f.dfCh && isMsgTooBig(err) {
		f.kick(evPMTURestart)
	}
}

// writeLocked sends a sealed datagram; ch.mu must be held.
func (f *forwarder) writeLocked(ch *channel, d []byte) error {
	ap := f.remoteAddr.Load()
	if ap == nil {
		f.cnt.TxDropped.Add(1)
		return errNoRemoteAddr
	}
	s := f.o.socketsFor(ap.Addr())
	if s == nil {
		f.cnt.TxErrors.Add(1)
		return fmt.Errorf("send datagram to %s: %w", ap.String(), errNoFamilySocket)
	}
	conn := s.main
	if ch.df {
		conn = s.df
	}
	if s.gso && f.o.batch.depth.Load() > 0 && !f.o.batch.off.Load() {
		if f.deferLocked(ch, conn, *ap, d) {
			return nil
		}
	} else {
		f.flushRunLocked(ch) // keep the channel's order
	}
	if _, err := conn.WriteToUDPAddrPort(d, *ap); err != nil {
		f.cnt.TxErrors.Add(1)
		return fmt.Errorf("send datagram to %s: %w", ap.String(), err)
	}
	f.cnt.TxDatagrams.Add(1)
	f.cnt.TxBytes.Add(uint64(len(d)))
	f.cnt.TxFrames.Add(uint64(ch.enc.Frames()))
	return nil
}

// fragment splits an IPv4 packet (no DF, bigger than the path MTU) into
// fragments of at most mtu bytes and sends them on ch: the DF channel, as
// Weave does when the network does not reassemble UDP fragments for us, or
// the non-DF channel for a frame too big even for jumbo framing.
func (f *forwarder) fragment(ch *channel, src, dst mesh.PeerName, frame []byte, ihl, mtu int) error {
	ip := frame[ethHeaderLen:]
	total := int(binary.BigEndian.Uint16(ip[2:]))
	if total < ihl || total > len(ip) {
		total = len(ip)
	}
	payload := ip[ihl:total]
	flags := binary.BigEndian.Uint16(ip[6:])
	baseOff := int(flags&ipOffsetMask) * 8
	origMF := flags&ipFlagMF != 0
	chunk := (mtu - ihl) &^ 7
	if chunk <= 0 {
		f.cnt.TxDropped.Add(1)
		return nil
	}
	f.frag.Lock() // before ch.mu; nothing else takes frag
	defer f.frag.Unlock()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	buf := f.frag.buf
	copy(buf, frame[:ethHeaderLen+ihl])
	hdr := buf[ethHeaderLen : ethHeaderLen+ihl]
	for off := 0; off < len(payload); off += chunk {
		end := min(off+chunk, len(payload))
		n := copy(buf[ethHeaderLen+ihl:], payload[off:end])
		fl := uint16((baseOff+off)/8) & ipOffsetMask
		if end < len(payload) || origMF {
			fl |= ipFlagMF
		}
		binary.BigEndian.PutUint16(hdr[2:], uint16(ihl+n))
		binary.BigEndian.PutUint16(hdr[6:], fl)
		binary.BigEndian.PutUint16(hdr[10:], 0)
		binary.BigEndian.PutUint16(hdr[10:], ipChecksum(hdr))
		ch.enc.Begin()
		if !ch.enc.Append(src, dst, buf[:ethHeaderLen+ihl+n]) {
			f.cnt.TxDropped.Add(1)
			return nil
		}
		f.cnt.Fragments.Add(1)
		f.dataSent(ch, f.writeLocked(ch, ch.enc.Seal()))
	}
	return nil
}

// ipChecksum is the RFC 791 header checksum.
func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// segmentSize is the size of one segment datagram for an overlay MTU: the
// largest DF datagram discovery verified (overheadDF without IP and UDP).
func (f *forwarder) segmentSize(mtu int) int { return mtu + f.overheadDF() - f.ipUDPHeaders() }

// errGSORefused: the path refused a UDP_SEGMENT send; the frame is still to be sent.
var errGSORefused = errors.New("UDP GSO send refused")

// forwardSegmented sends a frame bigger than the path MTU as segments
// (segmented framing is on): runs of path-MTU-sized datagrams, one
// UDP_SEGMENT sendmsg per run, on the DF socket (so a shrinking path MTU
// shows as EMSGSIZE and restarts discovery). Where the path refuses GSO
// sends, segmented framing is turned off for this link and the frame goes
// the jumbo or Weave way.
func (f *forwarder) forwardSegmented(src, dst mesh.PeerName, frame []byte) error {
	if len(frame) > MaxSegmentedFrame {
		f.cnt.TxDropped.Add(1)
		return nil
	}
	ap := f.remoteAddr.Load()
	socks := (*sockets)(nil)
	if ap != nil {
		socks = f.o.socketsFor(ap.Addr())
	}
	if socks == nil {
		f.cnt.TxDropped.Add(1)
		return nil
	}
	segSize := f.segmentSize(int(f.mtu.Load()))
	f.flushRuns() // frames held back for a batch leave before this one
	c := &f.segCh
	c.Lock()
	defer c.Unlock()
	if c.enc.capacity(segSize) < 64 {
		f.cnt.TxDropped.Add(1)
		return nil
	}
	id := c.enc.begin()
	for off := 0; off < len(frame); {
		run, next := c.enc.fill(src, dst, id, frame, off, segSize)
		_, _, err := socks.df.WriteMsgUDPAddrPort(run, c.oob.set(segSize), *ap)
		switch {
		case err == nil:
		case off == 0 && isGSOUnsupported(err):
			f.seg.Store(false)
			f.log.Warn("sleeve segmented framing off: the path refuses UDP GSO sends", "err", err)
			return errGSORefused
		default:
			f.cnt.TxErrors.Add(1)
			f.dataSent(&f.dfCh, err)
			return nil
		}
		n := uint64((len(run) + segSize - 1) / segSize)
		f.cnt.TxDatagrams.Add(n)
		f.cnt.TxBytes.Add(uint64(len(run)))
		f.cnt.Segments.Add(n)
		off = next
	}
	f.cnt.TxFrames.Add(1)
	return nil
}
