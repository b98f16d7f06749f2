package liveness

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"time"
)

// joinsPerRound bounds the seeds contacted per JoinInterval. One join is
// a full state exchange with that peer; memberlist's gossip then spreads
// the others, so joining every seed one by one would cost n push/pulls
// per peer for nothing.
const joinsPerRound = 3

// try is the retry schedule of one seed we could not join.
type try struct {
	next    time.Time
	backoff time.Duration
}

func (d *Detector) joinLoop() {
	defer d.wg.Done()
	tries := map[string]*try{}
	t := time.NewTicker(d.cfg.Timing.JoinInterval)
	defer t.Stop()
	for {
		d.joinSeeds(tries, time.Now())
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
	}
}

// joinSeeds joins up to joinsPerRound seeds, in random order, that are not
// alive or suspect to us and whose backoff has passed. A peer without
// liveness (Weave 2.8.1, or ours with --no-liveness) refuses, and is
// retried ever more rarely. The states are read under one lock: with
// hundreds of seeds, a look-up each was most of a settled round's cost.
func (d *Detector) joinSeeds(tries map[string]*try, now time.Time) {
	var due []Seed
	seeds := d.cfg.Seeds() // not under d.mu: it reads mesh's status
	d.mu.Lock()
	for _, s := range seeds {
		if s.Name == d.cfg.Name || s.Host == "" || !sameFamily(d.cfg.AdvertiseAddr, s.Host) {
			continue
		}
		if st := d.table.get(s.Name).State; st == Alive || st == Suspect {
			delete(tries, s.Name)
			continue
		}
		if tr := tries[s.Name]; tr == nil || !now.Before(tr.next) {
			due = append(due, s)
		}
	}
	d.mu.Unlock()
	rand.Shuffle(len(due), func(i, j int) { due[i], due[j] = due[j], due[i] })
	for _, s := range due[:min(len(due), joinsPerRound)] {
		select {
		case <-d.stop:
			return
		default:
		}
		if _, err := d.Join(s.Host); err != nil {
			tries[s.Name] = d.backoff(tries[s.Name], now)
			d.cfg.Logger.Debug("cannot join liveness peer", "component", "liveness", "peer", s.Name, "err", err)
		}
	}
}

func (d *Detector) backoff(tr *try, now time.Time) *try {
	if tr == nil {
		tr = &try{backoff: d.cfg.Timing.JoinInterval}
	} else {
		tr.backoff = min(2*tr.backoff, d.cfg.Timing.JoinBackoffMax)
	}
	tr.next = now.Add(tr.backoff)
	return tr
}

// sameFamily reports whether seed host (an IP, or host:port) can be
// joined from a memberlist advertising adv: a memberlist of one family
// joins only peers of that family, so that every member it learns can be
// probed (memberlist assumes all can reach all, which a mesh of IPv4-only
// and IPv6-only hosts cannot give). A host name, or an advertised address
// that is not an IP, does not filter.
func sameFamily(adv, host string) bool {
	a, err := netip.ParseAddr(adv)
	if err != nil {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	b, err := netip.ParseAddr(host)
	if err != nil {
		return true
	}
	return a.Unmap().Is4() == b.Unmap().Is4()
}
