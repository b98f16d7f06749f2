package liveness

import (
	"errors"
	"testing"
	"time"
)

type fakeSource map[string]Status

func (f fakeSource) Get(p string) Status { return f[p] }

type reclaimCase struct {
	src      fakeSource
	holders  []string
	meshKnew map[string]bool
	taken    []string
	fail     error
}

func (c *reclaimCase) reclaimer(us string) *Reclaimer {
	return NewReclaimer(ReclaimConfig{
		After: time.Minute, Us: us,
		Holders:   func() []string { return c.holders },
		MeshKnows: func(p string) bool { return c.meshKnew[p] },
		Takeover: func(p string) error {
			if c.fail != nil {
				return c.fail
			}
			c.taken = append(c.taken, p)
			return nil
		},
	}, c.src)
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func fiveHosts(dead ...string) *reclaimCase {
	c := &reclaimCase{src: fakeSource{}, holders: []string{"h1", "h2", "h3", "h4", "h5"}}
	for _, h := range c.holders {
		c.src[h] = Status{Peer: h, State: Alive, Since: t0}
	}
	for _, d := range dead {
		c.src[d] = Status{Peer: d, State: Dead, Since: t0}
	}
	return c
}

func TestReclaimOnceByLowestLivePeerAfterTheDelay(t *testing.T) {
	c := fiveHosts("h1")
	r2, r3 := c.reclaimer("h2"), c.reclaimer("h3")
	if got := r2.Tick(t0.Add(59 * time.Second)); got != "" {
		t.Fatalf("reclaimed %q before the delay", got)
	}
	if got := r3.Tick(t0.Add(2 * time.Minute)); got != "" {
		t.Fatalf("h3 reclaimed %q although h2 is the lowest live peer", got)
	}
	if got := r2.Tick(t0.Add(2 * time.Minute)); got != "h1" {
		t.Fatalf("h2 reclaimed %q, want h1", got)
	}
	if got := r2.Tick(t0.Add(3 * time.Minute)); got != "" || len(c.taken) != 1 {
		t.Fatalf("second tick reclaimed %q; takeovers %v, want exactly one", got, c.taken)
	}
}

func TestNoReclaimOnEitherSideOfAPartition(t *testing.T) {
	// 3|2: the majority sees two holders dead, the minority three.
	maj := fiveHosts("h4", "h5")
	if got := maj.reclaimer("h1").Tick(t0.Add(time.Hour)); got != "" {
		t.Fatalf("majority reclaimed %q during a partition", got)
	}
	minor := fiveHosts("h1", "h2", "h3")
	for _, us := range []string{"h4", "h5"} {
		if got := minor.reclaimer(us).Tick(t0.Add(time.Hour)); got != "" {
			t.Fatalf("minority peer %s reclaimed %q", us, got)
		}
	}
}

func TestNoReclaimWithoutQuorum(t *testing.T) {
	// Two holders: the survivor is not a strict majority.
	c := &reclaimCase{src: fakeSource{"h2": {Peer: "h2", State: Dead, Since: t0}}, holders: []string{"h1", "h2"}}
	if got := c.reclaimer("h1").Tick(t0.Add(time.Hour)); got != "" {
		t.Fatalf("reclaimed %q with one of two holders", got)
	}
}

func TestSuspectAndMeshOnlyPeers(t *testing.T) {
	c := fiveHosts("h5")
	c.src["h4"] = Status{Peer: "h4", State: Suspect, Since: t0}
	if got := c.reclaimer("h1").Tick(t0.Add(time.Hour)); got != "" {
		t.Fatalf("reclaimed %q while another holder is suspect", got)
	}
	// h4 runs Weave 2.8.1 (no liveness): it counts as alive while mesh has it.
	delete(c.src, "h4")
	c.meshKnew = map[string]bool{"h4": true}
	if got := c.reclaimer("h1").Tick(t0.Add(time.Hour)); got != "h5" {
		t.Fatalf("reclaimed %q, want h5", got)
	}
	// A peer liveness never saw is never reclaimed by it.
	c = fiveHosts()
	delete(c.src, "h5")
	if got := c.reclaimer("h1").Tick(t0.Add(time.Hour)); got != "" {
		t.Fatalf("reclaimed %q, a peer liveness never saw", got)
	}
}

func TestFailedTakeoverIsRetriedAndPeerBackDeadAgainIsNew(t *testing.T) {
	c := fiveHosts("h3")
	c.fail = errors.New("peer still reachable")
	r := c.reclaimer("h1")
	if got := r.Tick(t0.Add(time.Hour)); got != "" {
		t.Fatalf("failed takeover reported as %q", got)
	}
	c.fail = nil
	if got := r.Tick(t0.Add(time.Hour)); got != "h3" {
		t.Fatalf("retry reclaimed %q, want h3", got)
	}
	c.src["h3"] = Status{Peer: "h3", State: Dead, Since: t0.Add(2 * time.Hour)}
	if got := r.Tick(t0.Add(4 * time.Hour)); got != "h3" {
		t.Fatalf("a second death was not reclaimed: %q", got)
	}
}
