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

// Segment layout. The segment header follows the datagram header in clear:
//
//	plaintext: sender(6) | header(26) | data
//	encrypted: sender(6) | seqNoAndDF(8, segment channel) | header(26) | data sealed | tag(16)
//	header:    src(6) dst(6) 0xffff(2) id(4) offset(4) total(4)
//
// Encrypted, everything before the sealed data is the AEAD's additional
// data, so the header is authenticated like the data; it is in clear so
// that data is sealed straight from the captured frame and opened straight
// into the frame being reassembled, with no copy on either side. It shows
// the originating and destination peer names (Weave hides those inside the
// box; the sender and the UDP addresses show them for direct traffic) and
// each frame's size. 0xffff is where a frame's length goes in Weave's
// framing; no real frame of that length fits a datagram, so a segment is
// never mistaken for a frame. id numbers the frames of one sender, offset
// and total place the data in its frame.
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

// isSegment reports whether b (a datagram without its sender, or without
// sender and seqNoAndDF) starts with a segment header.
func isSegment(b []byte) bool {
	return len(b) >= segHeaderLen && binary.BigEndian.Uint16(b[12:]) == segMarker
}

// segHeader is a parsed segment header.
type segHeader struct {
	src, dst   mesh.PeerName
	id         uint32
	off, total int
}

// putSegHeader writes h into b[:segHeaderLen].
func putSegHeader(b []byte, h segHeader) {
	PutPeerName(b, h.src)
	PutPeerName(b[NameSize:], h.dst)
	binary.BigEndian.PutUint16(b[12:], segMarker)
	binary.BigEndian.PutUint32(b[14:], h.id)
	binary.BigEndian.PutUint32(b[18:], uint32(h.off))
	binary.BigEndian.PutUint32(b[22:], uint32(h.total))
}

func parseSegHeader(b []byte) segHeader {
	return segHeader{
		src: PeerNameAt(b), dst: PeerNameAt(b[NameSize:]),
		id:  binary.BigEndian.Uint32(b[14:]),
		off: int(binary.BigEndian.Uint32(b[18:])), total: int(binary.BigEndian.Uint32(b[22:])),
	}
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
			binary.BigEndian.PutUint64(d[NameSize:], e.seq|segBit)
			hdr += SeqSize
		}
		putSegHeader(d[hdr:], segHeader{src: src, dst: dst, id: id, off: off, total: len(frame)})
		hdr += segHeaderLen
		size := hdr + chunk
		if e.aead != nil {
			aeadNonce(&e.nonce, e.outbound, e.seq|segBit)
			sealed := e.aead.Seal(d[hdr:hdr], e.nonce[:], frame[off:off+chunk], d[:hdr])
			size = hdr + len(sealed)
			e.seq++
		} else {
			copy(d[hdr:], frame[off:off+chunk])
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
// which arrive in order on one flow. Owned by the receive goroutine. Data
// goes straight into the frame: slot says where a segment's data belongs,
// the caller writes (copies or opens) it there, and commit accounts for it.
type reassembly struct {
	active      bool
	id          uint32
	next, total int
	src, dst    mesh.PeerName
	buf         []byte
	scratch     []byte // a new frame's first segment while another is unfinished
}

// slot checks the header of a segment with n data bytes and returns where
// to write them. It changes nothing, and the slot never overlaps data of
// the frame in progress, so a forged segment (which fails authentication
// after being opened into its slot) costs nothing: a segment that does not
// continue the frame in progress (a new frame's first, or one out of
// order) gets a scratch slot, and commit decides.
func (r *reassembly) slot(h segHeader, n int) ([]byte, error) {
	if h.total <= 0 || h.total > MaxSegmentedFrame || n <= 0 || h.off < 0 || h.off > h.total-n {
		return nil, fmt.Errorf("%w: offset %d, %d bytes, frame of %d", errSegBadHeader, h.off, n, h.total)
	}
	if r.buf == nil {
		r.buf, r.scratch = make([]byte, MaxSegmentedFrame), make([]byte, MaxSegmentedFrame)
	}
	switch {
	case r.continues(h):
		return r.buf[h.off : h.off+n], nil
	case h.off == 0 && !r.active:
		return r.buf[:n], nil
	}
	return r.scratch[:n], nil
}

func (r *reassembly) continues(h segHeader) bool {
	return r.active && h.off > 0 && h.id == r.id && h.off == r.next && h.total == r.total && h.src == r.src && h.dst == r.dst
}

// commit records the n data bytes written (and authenticated) in the slot
// of h. It returns the frame once its last segment is in (valid until the
// next slot), and errSegOrder when the segment cost a frame: it replaced an
// unfinished one, or arrived out of order (which ends the frame in
// progress: its missing data will not come).
func (r *reassembly) commit(h segHeader, n int) (frame []byte, err error) {
	switch {
	case r.continues(h):
	case h.off == 0:
		if r.active {
			err = fmt.Errorf("%w: frame %d lost at %d of %d bytes", errSegOrder, r.id, r.next, r.total)
			copy(r.buf, r.scratch[:n])
		}
		r.active, r.id, r.next, r.total, r.src, r.dst = true, h.id, 0, h.total, h.src, h.dst
	case r.active:
		r.active = false
		return nil, fmt.Errorf("%w: frame %d at %d, got frame %d at %d", errSegOrder, r.id, r.next, h.id, h.off)
	default:
		return nil, fmt.Errorf("%w: frame %d at %d with no frame begun", errSegOrder, h.id, h.off)
	}
	r.next += n
	if r.next < r.total {
		return nil, err
	}
	r.active = false
	return r.buf[:r.total], err
}

// add takes one plaintext segment (header and data): slot, copy, commit.
func (r *reassembly) add(rec []byte) (frame []byte, src, dst mesh.PeerName, err error) {
	if !isSegment(rec) {
		return nil, 0, 0, errSegBadHeader
	}
	h := parseSegHeader(rec)
	data := rec[segHeaderLen:]
	dstSlot, err := r.slot(h, len(data))
	if err != nil {
		return nil, 0, 0, err
	}
	copy(dstSlot, data)
	frame, err = r.commit(h, len(data))
	return frame, h.src, h.dst, err
}
