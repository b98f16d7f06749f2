package sleeve

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Send batching: while a batch is open (BeginBatch .. EndBatch, which the
// router's capture loop calls around each burst of captured frames), the
// datagrams a channel sends are not written one by one but collected in a
// run: back to back, every one the size of the first except possibly a
// shorter last, and sent as one UDP GSO sendmsg (UDP_SEGMENT) when the
// batch ends or the run can take no more. On the wire they are the same
// datagrams, in the same order, with the same sequence numbers, as
// unbatched sends: a 2.8.1 peer receives exactly what it would otherwise.
// The kernel walks its send path once per run instead of once per
// datagram, and a receiver with UDP_GRO (ours) takes the whole run in one
// recvmsg.

// txRun is one channel's datagrams waiting for a GSO send; ch.mu guards it.
type txRun struct {
	buf     []byte // MaxUDPPayload, made on the first batched send
	n       int    // bytes in buf
	size    int    // segment size: the first datagram's length
	segs    int
	frames  int
	closed  bool // the last datagram is shorter than size: no more may join
	to      netip.AddrPort
	conn    *net.UDPConn
	pending bool // listed in the overlay's batch, to be flushed at EndBatch
	// maxSize: datagrams longer than this go out unbatched (a GSO send of
	// such segments was refused with EINVAL: longer than the device MTU).
	maxSize int
	oob     gsoControl
}

// batchState is the overlay's open-batch count and the channels with a
// run to flush when the last batch ends.
type batchState struct {
	depth atomic.Int32
	off   atomic.Bool // the sockets refuse GSO sends: never batch
	mu    sync.Mutex  // guards pend
	pend  []pendingRun
	flush struct { // serialises EndBatch's flush pass; owns spare
		sync.Mutex
		spare []pendingRun
	}
}

type pendingRun struct {
	f  *forwarder
	ch *channel
}

// BeginBatch opens a batch: until the matching EndBatch, datagrams may be
// held back to leave together. Batches nest. Safe for concurrent use.
func (o *Overlay) BeginBatch() { o.batch.depth.Add(1) }

// EndBatch closes a batch; when it was the last open one, every run held
// back is sent.
func (o *Overlay) EndBatch() {
	if o.batch.depth.Add(-1) > 0 {
		return
	}
	b := &o.batch
	b.flush.Lock()
	defer b.flush.Unlock()
	b.mu.Lock()
	list := b.pend
	b.pend = b.flush.spare[:0]
	b.mu.Unlock()
	for i, p := range list {
		p.ch.mu.Lock()
		p.ch.run.pending = false
		p.f.flushRunLocked(p.ch)
		p.ch.mu.Unlock()
		list[i] = pendingRun{}
	}
	b.flush.spare = list[:0]
}

// maxBatchedDatagram: longer datagrams are sent at once, since a run
// holds at most MaxUDPPayload bytes and two of them would not fit.
const maxBatchedDatagram = MaxUDPPayload / 2

// deferLocked adds d (sealed by ch.enc, to ap on conn) to ch's run, sending
// the run first when d cannot join it; ch.mu is held and a batch is open.
// It reports false when d must be sent at once instead (the run, if any,
// already sent).
func (f *forwarder) deferLocked(ch *channel, conn *net.UDPConn, ap netip.AddrPort, d []byte) bool {
	r := &ch.run
	if len(d) > maxBatchedDatagram || (r.maxSize > 0 && len(d) > r.maxSize) {
		f.flushRunLocked(ch)
		return false
	}
	if r.segs > 0 && (r.closed || len(d) > r.size || r.to != ap || r.conn != conn ||
		r.segs >= maxGSOSegments || r.n+len(d) > MaxUDPPayload) {
		f.flushRunLocked(ch)
	}
	if r.buf == nil {
		r.buf = make([]byte, MaxUDPPayload) // once per channel
	}
	if r.segs == 0 {
		r.size, r.to, r.conn, r.closed = len(d), ap, conn, false
	}
	r.n += copy(r.buf[r.n:], d)
	r.segs++
	r.frames += ch.enc.Frames()
	r.closed = len(d) < r.size
	if !r.pending {
		r.pending = true
		b := &f.o.batch
		b.mu.Lock()
		b.pend = append(b.pend, pendingRun{f, ch})
		b.mu.Unlock()
	}
	// The batch may have ended between the caller's check and the listing
	// above, after EndBatch took the list: then nobody else flushes this run.
	if f.o.batch.depth.Load() <= 0 {
		f.flushRunLocked(ch)
	}
	return true
}

// flushRuns sends the runs of both datagram channels, so that a frame sent
// another way (segmented framing) does not overtake them.
func (f *forwarder) flushRuns() {
	for _, ch := range []*channel{&f.dfCh, &f.nonDFCh} {
		ch.mu.Lock()
		f.flushRunLocked(ch)
		ch.mu.Unlock()
	}
}

// flushRunLocked sends ch's run, if any; ch.mu is held. Errors are
// counted, as for unbatched sends; EMSGSIZE on the DF channel restarts
// path-MTU discovery.
func (f *forwarder) flushRunLocked(ch *channel) {
	r := &ch.run
	if r.segs == 0 {
		return
	}
	run, segs, frames := r.buf[:r.n], r.segs, r.frames
	r.n, r.segs, r.frames, r.closed = 0, 0, 0, false
	var err error
	if segs == 1 {
		_, err = r.conn.WriteToUDPAddrPort(run, r.to)
	} else {
		_, _, err = r.conn.WriteMsgUDPAddrPort(run, r.oob.set(r.size), r.to)
		if err != nil && (isGSOUnsupported(err) || isMsgTooBig(err)) {
			f.gsoRefused(ch, err)
			f.sendEach(ch, run, frames)
			return
		}
	}
	if err != nil {
		f.cnt.TxErrors.Add(uint64(segs))
		f.dataSent(ch, err)
		return
	}
	f.cnt.TxDatagrams.Add(uint64(segs))
	f.cnt.TxBytes.Add(uint64(len(run)))
	f.cnt.TxFrames.Add(uint64(frames))
}

// gsoRefused reacts to a refused GSO send of ch's run: EMSGSIZE or EINVAL
// means these segments are longer than the device or path takes (so
// shorter ones may still batch; sent alone, non-DF ones are fragmented and
// DF ones fail as they would unbatched); anything else means the path
// takes no GSO sends at all.
func (f *forwarder) gsoRefused(ch *channel, err error) {
	r := &ch.run
	if (isInvalid(err) || isMsgTooBig(err)) && r.size > 1 {
		// Longer than the device takes: hold at most what the verified
		// path MTU allows (or, unverified, anything shorter than this).
		r.maxSize = min(r.size-1, max(f.segmentSize(int(f.mtu.Load())), 1))
		return
	}
	if !f.o.batch.off.Swap(true) {
		f.log.Warn("sleeve send batching off: the path refuses UDP GSO sends", "err", err)
	}
}

// sendEach sends the datagrams of a run one by one (its GSO send was refused).
func (f *forwarder) sendEach(ch *channel, run []byte, frames int) {
	r := &ch.run
	for off := 0; off < len(run); off += r.size {
		d := run[off:min(off+r.size, len(run))]
		if _, err := r.conn.WriteToUDPAddrPort(d, r.to); err != nil {
			f.cnt.TxErrors.Add(1)
			f.dataSent(ch, err)
			continue
		}
		f.cnt.TxDatagrams.Add(1)
		f.cnt.TxBytes.Add(uint64(len(d)))
	}
	f.cnt.TxFrames.Add(uint64(frames))
}

// maxRxBatch bounds the datagrams of one receive batch, so that frames
// held back by the injector wait for at most this many datagrams.
const maxRxBatch = 64

// SetBatch makes the receive loop's handling a batch of the injector's:
// begin is called before the first datagram of a burst is handled and end
// once no datagram is waiting (or after maxRxBatch), so the injector can
// write a burst's frames together (capture.Handle: one sendmmsg). Call
// before traffic flows; nil turns it off.
func (o *Overlay) SetBatch(begin, end func()) {
	o.rx.Lock()
	defer o.rx.Unlock()
	o.rx.batch.Set(begin, end, maxRxBatch)
}

// closeRxBatch closes the open receive batch, if any (a receive loop ends).
func (o *Overlay) closeRxBatch() {
	o.rx.Lock()
	defer o.rx.Unlock()
	o.rx.batch.End()
}
