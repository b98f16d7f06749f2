package liveness

import (
	"math"
	"time"
)

// suspicionMaxTimeoutMult is memberlist's DefaultLANConfig value, which we
// keep.
const suspicionMaxTimeoutMult = 6

// pollLoop reads memberlist's states when something changed: memberlist
// reports joins, leaves (deaths) and updates, our prober its suspicions and
// their refutations (all poke wake), and a suspicion that memberlist
// neither confirmed nor heard refuted ends at a time we know. So a
// quiet cluster is not polled at all, but for a backstop every
// idlePolls x PollInterval, and a busy one (a join storm wakes us for
// every member) at most once per PollInterval: each snapshot copies every
// member, and a fixed 100 ms tick of that was, on a host of 500 peers, the
// biggest cost of an idle detector.
func (d *Detector) pollLoop() {
	defer d.wg.Done()
	every := d.cfg.Timing.PollInterval
	t := time.NewTimer(every)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		case <-d.wake:
		}
		if wait := every - time.Since(last); wait > 0 {
			select {
			case <-d.stop:
				return
			case <-time.After(wait):
			}
		}
		select { // a wake that came meanwhile is served by this poll
		case <-d.wake:
		default:
		}
		now := time.Now()
		last = now
		d.polls.Add(1)
		seen, next := d.snapshot(now)
		d.apply(seen, now)
		if next.IsZero() || next.Sub(now) > idlePolls*every {
			next = now.Add(idlePolls * every)
		}
		t.Reset(next.Sub(now))
	}
}

// idlePolls x PollInterval is the longest pollLoop waits without a wake.
const idlePolls = 20

// snapshot returns the state of every member memberlist has not declared
// dead. memberlist offers no view of its own suspicions, so a member is
// Suspect while our prober suspects it (it logged so) and neither a later
// probe answered nor the longest suspicion timeout passed without
// memberlist declaring it dead (then the peer refuted the suspicion).
// next is when the first such suspicion ends (zero without suspects).
func (d *Detector) snapshot(now time.Time) (seen map[string]State, next time.Time) {
	members := d.ml.Members()
	seen = make(map[string]State, len(members))
	maxSuspicion := d.maxSuspicion(len(members))
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range members {
		st := Alive
		if at, ok := d.suspects[n.Name]; ok && now.Sub(at) < maxSuspicion {
			st = Suspect
			if end := at.Add(maxSuspicion); next.IsZero() || end.Before(next) {
				next = end
			}
		}
		seen[n.Name] = st
	}
	for name := range d.suspects {
		if seen[name] != Suspect {
			delete(d.suspects, name)
		}
	}
	delete(seen, d.cfg.Name)
	return seen, next
}

// maxSuspicion is memberlist's longest suspicion timeout for n members
// (SuspicionMaxTimeoutMult * SuspicionMult * log10(n) * ProbeInterval),
// plus one probe interval of slack.
func (d *Detector) maxSuspicion(n int) time.Duration {
	t := d.cfg.Timing
	scale := max(1, math.Log10(float64(n)))
	return time.Duration(float64(suspicionMaxTimeoutMult*t.SuspicionMult)*scale*float64(t.ProbeInterval)) + t.ProbeInterval
}

// apply records the transitions from the last snapshot to seen: members
// missing from seen are dead (memberlist declared them dead or they left).
func (d *Detector) apply(seen map[string]State, now time.Time) {
	var changes []Change
	d.mu.Lock()
	for name, st := range seen {
		changes = d.set(changes, name, st, now)
	}
	for name, s := range d.table.peers {
		if _, ok := seen[name]; !ok && s.State != Dead {
			changes = d.set(changes, name, Dead, now)
		}
	}
	if len(changes) > 0 {
		d.table.notify()
	}
	d.mu.Unlock()
	for _, c := range changes {
		d.cfg.Logger.Info("peer liveness changed", "component", "liveness", "peer", c.Peer,
			"from", c.From.String(), "to", c.To.String())
		if d.cfg.OnChange != nil {
			d.cfg.OnChange(c)
		}
	}
}

func (d *Detector) set(changes []Change, name string, st State, now time.Time) []Change {
	old, changed := d.table.set(name, st, now)
	if !changed {
		return changes
	}
	return append(changes, Change{Peer: name, From: old.State, To: st, At: now})
}
