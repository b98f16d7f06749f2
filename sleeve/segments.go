package sleeve

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/weaveworks/mesh"
)

// SegmentsFeature is the mesh connection feature by which two of our
// routers agree on segmented framing. Each side that offers it sets it to
// "1", and offers it only when its kernel has UDP GSO and GRO (UDP_SEGMENT,
// UDP_GRO) and, on an encrypted link, an AEAD was negotiated. Weave 2.8.1
// never sets it, so links to Weave peers keep Weave's framing.
//
// Segmented framing replaces jumbo framing's one 64 KiB datagram, which the
// underlay's IP layer cuts into ~45 fragments, by up to 64 KiB of
// path-MTU-sized datagrams ("segments") that carry consecutive pieces of one
// frame. Each segment is a complete sleeve datagram (own sequence number,
// own seal, own replay check), so a lost or forged segment costs that frame
// only, and no IP fragment is ever sent. The sender hands a whole run of
// equal-sized segments to the kernel in one sendmsg with UDP_SEGMENT; the
// kernel keeps them as one GSO packet as far as it can (through veth and
// the host stack, segmenting only for a device that needs it) and the
// receiving socket, with UDP_GRO, gets them back as one buffer. Frames that
// fit one datagram go out in Weave's framing as before.
const SegmentsFeature = "SleeveSegments"

// Segment record (the frames part of a datagram, in clear or sealed):
//
//	src(6) dst(6) 0xffff(2) id(4) offset(4) total(4) data
//
// 0xffff is where a frame's length goes; no real frame of that length fits
// a datagram, so a segment is never mistaken for a frame. id numbers the
// frames of one sender (segment channel), offset and total place data in
// the frame.
const (
	segMarker    = 0xffff
	segHeaderLen = FrameOverhead + 12
	// MaxSegmentedFrame is the largest frame segmented framing carries: an
	// Ethernet header and a 65535-byte IP packet.
	MaxSegmentedFrame = ethHeaderLen + 65535
	// maxGSOSegments bounds the segments of one sendmsg (the kernel's
	// UDP_MAX_SEGMENTS is 64 on older kernels).
	maxGSOSegments = 64
)

var (
	errSegBadHeader = errors.New("malformed segment header")
	errSegOrder     = errors.New("segment out of order")
)

// isSegment reports whether the frames part of a datagram is a segment.
func isSegment(frames []byte) bool {
	return len(frames) >= segHeaderLen && binary.BigEndian.Uint16(frames[12:]) == segMarker
}

// segEncoder builds runs of segment datagrams for one forwarder. It owns
// one buffer and does not allocate; callers serialise (segChannel.mu).
type segEncoder struct {
	sender   mesh.PeerName
	aead     cipher.AEAD // nil: plaintext
	nonce    [12]byte
	outbound bool
	seq      uint64
	id       uint32
	buf      []byte
}

func newSegEncoder(sender mesh.PeerName, aead cipher.AEAD, outbound bool) *segEncoder {
	return &segEncoder{sender: sender, aead: aead, outbound: outbound, buf: make([]byte, MaxUDPPayload)}
}

func (e *segEncoder) overhead() int {
	if e.aead != nil {
		return SealedOverhead
	}
	return PlainOverhead
}

// capacity is the frame bytes one segment datagram of segSize carries.
func (e *segEncoder) capacity(segSize int) int { return segSize - e.overhead() - segHeaderLen }

// begin starts a new frame and returns its id.
func (e *segEncoder) begin() uint32 { e.id++; return e.id }

// fill builds the segments of frame (id from begin) starting at off,
// as many as one GSO send takes, back to back in one buffer: every one
// segSize bytes except possibly the last. It returns the run and the
// offset of the first byte it did not cover (len(frame) when done).
func (e *segEncoder) fill(src, dst mesh.PeerName, id uint32, frame []byte, off, segSize int) ([]byte, int) {
	capa := e.capacity(segSize)
	n := 0
	for k := 0; off < len(frame) && k < maxGSOSegments && n+segSize <= len(e.buf); k++ {
		chunk := min(capa, len(frame)-off)
		d := e.buf[n:]
		PutPeerName(d, e.sender)
		hdr := NameSize
		if e.aead != nil {
			hdr += SeqSize
			binary.BigEndian.PutUint64(d[NameSize:], e.seq|segBit)
		}
		r := d[hdr:]
		PutPeerName(r, src)
		PutPeerName(r[NameSize:], dst)
		binary.BigEndian.PutUint16(r[12:], segMarker)
		binary.BigEndian.PutUint32(r[14:], id)
		binary.BigEndian.PutUint32(r[18:], uint32(off))
		binary.BigEndian.PutUint32(r[22:], uint32(len(frame)))
		copy(r[segHeaderLen:], frame[off:off+chunk])
		size := hdr + segHeaderLen + chunk
		if e.aead != nil {
			aeadNonce(&e.nonce, e.outbound, e.seq|segBit)
			sealed := e.aead.Seal(d[hdr:hdr], e.nonce[:], d[hdr:size], d[:hdr])
			size = hdr + len(sealed)
			e.seq++
		}
		n += size
		off += chunk
		if chunk < capa {
			break // a short segment can only be the last of a GSO run
		}
	}
	return e.buf[:n], off
}

// reassembly puts one sender's frames back together from their segments,
// which arrive in order on one flow. Owned by the receive goroutine.
type reassembly struct {
	active      bool
	id          uint32
	next, total int
	src, dst    mesh.PeerName
	buf         []byte
}

// add takes one segment record. It returns the frame once its last segment
// is in (valid until the next add), or an error for a record that does not
// continue the frame in progress: a new frame (offset 0) replaces an
// unfinished one, whose loss is reported as errSegOrder.
func (r *reassembly) add(rec []byte) (frame []byte, src, dst mesh.PeerName, err error) {
	if !isSegment(rec) {
		return nil, 0, 0, errSegBadHeader
	}
	id := binary.BigEndian.Uint32(rec[14:])
	off := int(binary.BigEndian.Uint32(rec[18:]))
	total := int(binary.BigEndian.Uint32(rec[22:]))
	data := rec[segHeaderLen:]
	if total <= 0 || total > MaxSegmentedFrame || len(data) == 0 || off < 0 || off > total-len(data) {
		return nil, 0, 0, fmt.Errorf("%w: offset %d, %d bytes, frame of %d", errSegBadHeader, off, len(data), total)
	}
	if off == 0 {
		if r.active {
			err = fmt.Errorf("%w: frame %d lost at %d of %d bytes", errSegOrder, r.id, r.next, r.total)
		}
		if r.buf == nil {
			r.buf = make([]byte, MaxSegmentedFrame)
		}
		r.active, r.id, r.next, r.total = true, id, 0, total
		r.src, r.dst = PeerNameAt(rec), PeerNameAt(rec[NameSize:])
	} else if !r.active || id != r.id || off != r.next || total != r.total ||
		PeerNameAt(rec) != r.src || PeerNameAt(rec[NameSize:]) != r.dst {
		was := r.active
		r.active = false
		if was {
			return nil, 0, 0, fmt.Errorf("%w: frame %d at %d, got frame %d at %d", errSegOrder, r.id, r.next, id, off)
		}
		return nil, 0, 0, fmt.Errorf("%w: frame %d at %d with no frame begun", errSegOrder, id, off)
	}
	copy(r.buf[off:], data)
	r.next += len(data)
	if r.next < r.total {
		return nil, 0, 0, err
	}
	r.active = false
	return r.buf[:r.total], r.src, r.dst, err
}
