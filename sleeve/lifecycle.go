package sleeve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/weaveworks/mesh"
)

// pmtu is the PMTU discovery state, owned by the forwarder goroutine.
type pmtu struct {
	active      bool
	searching   bool // the kernel's answer failed: binary search
	candidate   int
	highestGood int
	lowestBad   int
	attempt     int
	wait        time.Duration
	timer       *time.Timer
}

// loop state owned by the forwarder goroutine.
type loop struct {
	hb       *time.Timer
	retry    *time.Timer // fragmentation test retry (jumbo-capable peer)
	retries  int
	timeout  *time.Timer
	fragTick *time.Ticker
	fragC    <-chan time.Time
	acked    bool // remote acknowledged our heartbeats
	p        pmtu
}

func (f *forwarder) run() {
	defer f.wg.Done()
	l := &loop{
		hb:      time.NewTimer(0),
		timeout: time.NewTimer(f.timing.HeartbeatTimeout),
		p:       pmtu{timer: time.NewTimer(time.Hour)},
		retry:   time.NewTimer(time.Hour),
	}
	l.p.timer.Stop()
	l.retry.Stop()
	defer l.retry.Stop()
	defer l.hb.Stop()
	defer l.timeout.Stop()
	defer l.p.timer.Stop()
	defer func() {
		if l.fragTick != nil {
			l.fragTick.Stop()
		}
	}()
	for {
		select {
		case <-f.stop:
			return
		case <-l.hb.C:
			f.sendHeartbeat()
			l.hb.Reset(f.heartbeatInterval(l.acked))
		case <-l.timeout.C:
			f.log.Warn("sleeve heartbeat timeout", "after", f.timing.HeartbeatTimeout)
			f.fail(fmt.Errorf("sleeve to %s: %w in %s", f.remote, ErrHeartbeatTimeout, f.timing.HeartbeatTimeout))
			return
		case <-l.fragC:
			f.sendFragTest()
		case <-l.retry.C:
			f.retryFragTest(l)
		case <-l.p.timer.C:
			f.probeTimeout(&l.p)
		case ev := <-f.events:
			f.handleEvent(l, ev)
		case <-f.kickCh:
			kinds := f.kicks.Swap(0)
			for kind := evHeartbeat; kind <= evPMTUVerified; kind++ {
				if kinds&(1<<kind) != 0 {
					f.handleEvent(l, event{kind: kind})
				}
			}
		}
	}
}

func (f *forwarder) heartbeatInterval(acked bool) time.Duration {
	if acked {
		return f.timing.SlowHeartbeat
	}
	return f.timing.FastHeartbeat
}

func (f *forwarder) handleEvent(l *loop, ev event) {
	switch ev.kind {
	case evHeartbeat:
		l.timeout.Reset(f.timing.HeartbeatTimeout)
		if !f.acked.Swap(true) {
			f.sendControl(TagConnectionEstablished, nil)
		}
	case evFragTest:
		f.sendControl(TagFragmentationReceived, nil)
	case evProbe:
		var b [2]byte
		binary.BigEndian.PutUint16(b[:], uint16(ev.n-ethHeaderLen))
		f.sendControl(TagPMTUVerified, b[:])
	case evEstablished:
		f.onEstablished(l)
	case evFragReceived:
		if !f.stackFrag.Swap(true) {
			f.log.Debug("sleeve fragmentation test passed")
		}
		if f.peerJumbo && !f.jumbo.Swap(true) {
			f.log.Info("sleeve jumbo framing on", "mtu", f.jumboMTU)
		}
	case evPMTUVerified:
		f.probeVerified(&l.p, ev.n)
	case evPMTURestart:
		if f.established.Load() && !l.p.active {
			f.startPMTU(&l.p)
		}
	}
}

func (f *forwarder) onEstablished(l *loop) {
	if l.acked {
		return
	}
	l.acked = true
	l.hb.Reset(f.timing.SlowHeartbeat)
	f.established.Store(true)
	close(f.estCh)
	f.log.Info("sleeve connection established")
	f.sendFragTest()
	l.fragTick = time.NewTicker(f.timing.FragTestInterval)
	l.fragC = l.fragTick.C
	if f.peerJumbo {
		l.retry.Reset(f.timing.FragTestRetry)
	}
	f.startPMTU(&l.p)
}

// fragTestRetries bounds the fragmentation test retries (FragTestRetry).
const fragTestRetries = 10

// retryFragTest re-sends the fragmentation test to a jumbo-capable peer
// until it passes: jumbo framing depends on it.
func (f *forwarder) retryFragTest(l *loop) {
	if f.stackFrag.Load() || l.retries >= fragTestRetries {
		return
	}
	l.retries++
	f.sendFragTest()
	l.retry.Reset(f.timing.FragTestRetry)
}

func (f *forwarder) sendFragTest() {
	if err := f.sendSpecial(&f.nonDFCh, fragTestLen, nil); err != nil {
		f.log.Debug("sleeve fragmentation test send failed", "err", err)
	}
}

// startPMTU sends the 60000-byte discovery probe; the kernel either
// refuses it (EMSGSIZE, which tells us its PMTU) or it goes out and is
// verified like any other candidate.
func (f *forwarder) startPMTU(p *pmtu) {
	*p = pmtu{timer: p.timer, active: true, highestGood: minMTU, lowestBad: initialMTU + 1}
	f.probe(p, pmtuDiscoverLen-ethHeaderLen)
}

// probe sends an MTU probe for candidate and arms the verify timer.
func (f *forwarder) probe(p *pmtu, candidate int) {
	for {
		p.candidate, p.attempt, p.wait = candidate, 0, f.timing.MTUVerifyTimeout
		err := f.sendSpecial(&f.dfCh, candidate+ethHeaderLen, nil)
		if err == nil || !isMsgTooBig(err) {
			break
		}
		p.lowestBad = min(p.lowestBad, candidate)
		next := candidate - 1
		if remote := f.remoteAddr.Load(); remote != nil {
			if s := f.o.socketsFor(remote.Addr()); s != nil {
				if kp, kerr := s.kernelPMTU(*remote); kerr == nil {
					next = kp - f.overheadDF()
				}
			}
		}
		if next >= p.lowestBad {
			next = (p.highestGood + p.lowestBad) / 2
		}
		if next <= p.highestGood {
			f.settle(p, p.highestGood)
			return
		}
		candidate = next
	}
	p.timer.Reset(p.wait)
}

func (f *forwarder) probeTimeout(p *pmtu) {
	if !p.active {
		return
	}
	p.attempt++
	if p.attempt < f.timing.MTUVerifyAttempts {
		p.wait *= 2
		if err := f.sendSpecial(&f.dfCh, p.candidate+ethHeaderLen, nil); err != nil {
			f.log.Debug("sleeve MTU probe resend failed", "err", err)
		}
		p.timer.Reset(p.wait)
		return
	}
	p.searching = true
	p.lowestBad = p.candidate
	f.nextCandidate(p)
}

func (f *forwarder) probeVerified(p *pmtu, mtu int) {
	if !p.active || mtu != p.candidate {
		return
	}
	p.timer.Stop()
	if !p.searching {
		f.settle(p, mtu)
		return
	}
	p.highestGood = mtu
	f.nextCandidate(p)
}

func (f *forwarder) nextCandidate(p *pmtu) {
	if p.lowestBad-p.highestGood <= 1 {
		f.settle(p, p.highestGood)
		return
	}
	f.probe(p, (p.highestGood+p.lowestBad)/2)
}

func (f *forwarder) settle(p *pmtu, mtu int) {
	p.active = false
	p.timer.Stop()
	f.mtu.Store(int32(mtu))
	f.log.Info(fmt.Sprintf("Effective MTU verified at %d", mtu), "mtu", mtu)
	if f.peerSeg && !f.seg.Swap(true) {
		f.log.Info("sleeve segmented framing on", "segment", f.segmentSize(mtu))
	}
}

// receive handles one datagram from this forwarder's remote peer; it runs
// on the overlay's receive goroutine. plain is a reusable buffer.
func (f *forwarder) receive(d []byte, from netip.AddrPort, plain []byte) {
	f.cnt.RxDatagrams.Add(1)
	f.cnt.RxBytes.Add(uint64(len(d)))
	frames := d[NameSize:]
	if f.opener != nil {
		if len(d) >= NameSize+SeqSize && binary.BigEndian.Uint64(d[NameSize:])&segBit != 0 {
			f.receiveSealedSegment(d) // opened into the frame being reassembled
			return
		}
		p, err := f.opener.Open(plain, d)
		if err != nil {
			f.countOpenError(err)
			return
		}
		frames = p
	}
	if isSegment(frames) {
		f.receiveSegment(frames)
		return
	}
	it := NewFrameIter(frames)
	for it.Next() {
		if isSpecial(it.Frame) {
			f.handleSpecial(it.Frame, from)
			continue
		}
		f.cnt.RxFrames.Add(1)
		f.o.cfg.Handler.HandleForwarded(it.Src, it.Dst, it.Frame)
	}
	if it.Err() != nil {
		f.cnt.RxDropped.Add(1)
	}
}

// receiveSegment adds one plaintext segment to the frame being reassembled
// and hands the frame on once complete. Segments from a peer that did not
// negotiate segmented framing are dropped.
func (f *forwarder) receiveSegment(rec []byte) {
	if !f.peerSeg {
		f.cnt.RxDropped.Add(1)
		return
	}
	frame, src, dst, err := f.reasm.add(rec)
	f.segmentDone(frame, src, dst, err)
}

// receiveSealedSegment opens an encrypted segment straight into the frame
// being reassembled.
func (f *forwarder) receiveSealedSegment(d []byte) {
	const hdr = NameSize + SeqSize
	tag := f.opener.Overhead()
	if !f.peerSeg || len(d) < hdr+segHeaderLen+tag+1 || !isSegment(d[hdr:]) {
		f.cnt.RxDropped.Add(1)
		return
	}
	h := parseSegHeader(d[hdr:])
	slot, err := f.reasm.slot(h, len(d)-hdr-segHeaderLen-tag)
	if err != nil {
		f.cnt.RxDropped.Add(1)
		return
	}
	if err := f.opener.OpenSegment(slot, d); err != nil {
		f.countOpenError(err)
		return
	}
	frame, err := f.reasm.commit(h, len(slot))
	f.segmentDone(frame, h.src, h.dst, err)
}

func (f *forwarder) segmentDone(frame []byte, src, dst mesh.PeerName, err error) {
	if err != nil {
		f.cnt.RxDropped.Add(1)
	}
	if frame != nil {
		f.cnt.RxFrames.Add(1)
		f.o.cfg.Handler.HandleForwarded(src, dst, frame)
	}
}

func (f *forwarder) countOpenError(err error) {
	switch {
	case errors.Is(err, ErrReplay):
		f.cnt.RxReplays.Add(1)
	case errors.Is(err, ErrAuth):
		f.cnt.RxAuthFailed.Add(1)
	default:
		f.cnt.RxDropped.Add(1)
	}
}

// isSpecial reports whether frame starts with an all-zero Ethernet header.
func isSpecial(frame []byte) bool {
	if len(frame) < ethHeaderLen {
		return false
	}
	for _, b := range frame[:ethHeaderLen] {
		if b != 0 {
			return false
		}
	}
	return true
}

func (f *forwarder) handleSpecial(frame []byte, from netip.AddrPort) {
	switch len(frame) {
	case heartbeatLen:
		if binary.BigEndian.Uint64(frame[ethHeaderLen:]) != f.params.ConnUID {
			f.cnt.RxDropped.Add(1)
			return
		}
		f.learnAddr(from)
		f.kick(evHeartbeat)
	case fragTestLen:
		f.kick(evFragTest)
	default:
		f.post(event{kind: evProbe, n: len(frame)})
	}
}

// learnAddr records the remote UDP address of an inbound connection from
// a valid heartbeat, following it if it changes (NAT).
func (f *forwarder) learnAddr(from netip.AddrPort) {
	if f.params.Outbound {
		return
	}
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	if cur := f.remoteAddr.Load(); cur != nil && *cur == from {
		return
	}
	f.remoteAddr.Store(&from)
	f.log.Debug("sleeve learned remote address", "addr", from.String())
}
