package fastdp

import (
	"fmt"
	"time"
)

// run is the forwarder's actor: it sends heartbeats, acknowledges the
// peer's, and moves the link between verifying, usable and on hold.
func (f *forwarder) run() {
	defer f.wg.Done()
	f.st.start = time.Now()
	small := make([]byte, smallHeartbeatLen)
	full := make([]byte, f.fullHB)
	putHeartbeat(small, f.uid)
	putHeartbeat(full, f.uid)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			f.st.sentAt = time.Now() // before: an ack may be queued before the second send returns
			f.sendHeartbeats(small, full)
			f.evaluate(time.Now())
			t.Reset(f.period())
		case ev := <-f.events:
			f.handle(ev, time.Now())
			f.evaluate(time.Now())
		}
	}
}

// period is FastHeartbeat while a new link is being verified, then
// HeartbeatInterval (also for a link that never verified, so a blocked
// path is retried at the steady rate).
func (f *forwarder) period() time.Duration {
	if !f.st.established && time.Since(f.st.start) < f.o.cfg.HeartbeatTimeout {
		return f.o.cfg.FastHeartbeat
	}
	return f.o.cfg.HeartbeatInterval
}

func (f *forwarder) sendHeartbeats(small, full []byte) {
	c := f.conn.Load()
	if c == nil || f.superseded.Load() {
		return
	}
	for _, hb := range [][]byte{small, full} {
		if err := (*c).WriteFrame(hb); err != nil {
			f.log.Debug("send vxlan heartbeat", "len", len(hb), "err", err)
		}
	}
}

func (f *forwarder) handle(ev event, now time.Time) {
	switch ev.kind {
	case evRx:
		if ev.n > smallHeartbeatLen {
			f.st.lastRx = now
		}
		if err := f.send(tagHeartbeatAck, ackBody(ev.n)); err != nil {
			f.log.Debug("send vxlan heartbeat ack", "err", err)
		}
	case evAck:
		switch ev.n {
		case f.fullHB:
			f.st.lastAck = now
		case smallHeartbeatLen:
			f.st.lastSmallAck = now
			if !f.st.sentAt.IsZero() && now.Sub(f.st.sentAt) < f.period() {
				f.rtt.Store(int64(now.Sub(f.st.sentAt)))
				f.rttAt.Store(now.UnixNano())
			}
		}
	}
}

// fresh reports whether t is set and within the heartbeat timeout.
func (f *forwarder) fresh(t, now time.Time) bool {
	return !t.IsZero() && now.Sub(t) < f.o.cfg.HeartbeatTimeout
}

// evaluate applies the state machine after a tick or an event.
func (f *forwarder) evaluate(now time.Time) {
	ok := f.fresh(f.st.lastRx, now) && f.fresh(f.st.lastAck, now) && !f.superseded.Load()
	if !ok {
		f.setReason(f.diagnose(now))
	}
	if !f.st.established {
		if !ok {
			return
		}
		f.st.established, f.st.healthy = true, true
		f.setUsable(true)
		f.log.Info("VXLAN link verified", "mtu", f.o.cfg.MTU, "local", f.spec.Local, "remote", f.fdb.Dst)
		close(f.estCh)
		return
	}
	if ok == f.st.healthy {
		return
	}
	f.st.healthy = ok
	if ok {
		f.log.Info("VXLAN link healthy again; leaving sleeve")
		f.setUsable(true)
	} else {
		f.log.Warn("VXLAN link on hold; using sleeve", "reason", f.FallbackReason())
		f.setUsable(false)
	}
	select {
	case f.healthCh <- ok:
	case <-f.stop:
	}
}

// setUsable opens or closes the bridge port and the Forward path. The
// port opens before Forward may use it and Forward stops before it closes.
func (f *forwarder) setUsable(on bool) {
	if !on {
		f.usable.Store(false)
	}
	flags := PortFlags{Isolated: true, Learning: on, Flush: !on}
	if err := f.o.k.SetPort(f.dev, flags); err != nil {
		f.log.Warn("cannot set vxlan bridge port flags", "err", err)
	}
	if on {
		f.usable.Store(true)
	}
}

// diagnose names the most likely reason the link is not usable.
func (f *forwarder) diagnose(now time.Time) string {
	port, timeout := f.o.cfg.Port, f.o.cfg.HeartbeatTimeout
	switch {
	case f.superseded.Load():
		return errSuperseded.Error()
	case !f.st.established && now.Sub(f.st.start) < timeout && f.st.lastAck.IsZero():
		return fmt.Sprintf("verifying VXLAN path (UDP %d)", port)
	case f.fresh(f.st.lastSmallAck, now) && !f.fresh(f.st.lastAck, now):
		if f.ipv6 {
			return fmt.Sprintf("MTU too small: full-size VXLAN probe (%d bytes, %d with IPv6 underlay headers) lost, small ones pass",
				f.fullHB, f.o.cfg.MTU+Overhead6)
		}
		return fmt.Sprintf("MTU too small: full-size VXLAN probe (%d bytes) lost, small ones pass", f.fullHB)
	case !f.fresh(f.st.lastAck, now):
		return fmt.Sprintf("no VXLAN heartbeat ack for %s: UDP %d blocked or peer unreachable", timeout, port)
	default:
		return fmt.Sprintf("no VXLAN heartbeat from peer for %s: UDP %d blocked inbound", timeout, port)
	}
}
