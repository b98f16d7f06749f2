package liveness

import (
	"math/rand/v2"
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
		if s.Name == d.cfg.Name || s.Host == "" {
			continue
		}
		if st := d.peers[s.Name].State; st == Alive || st == Suspect {
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
