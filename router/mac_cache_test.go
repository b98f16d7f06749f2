package router

import (
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestCache() (*macCache, *fakeClock) {
	clk := &fakeClock{t: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)}
	return newMACCache(10*time.Minute, 2*time.Second, clk.now), clk
}

func TestMACCacheLearnAndConflict(t *testing.T) {
	c, clk := newTestCache()
	if r := c.Add(macLocal, us); r != macNew {
		t.Fatalf("first Add = %v, want macNew", r)
	}
	if r := c.Add(macLocal, us); r != macFresh {
		t.Fatalf("second Add = %v, want macFresh", r)
	}
	if r := c.AddForced(macRemote, peerB); r != macNew {
		t.Fatalf("AddForced = %v", r)
	}
	// Captured locally while recently seen behind B: loop, dropped.
	clk.advance(time.Second)
	if r := c.Add(macRemote, us); r != macConflict {
		t.Fatalf("Add of remote MAC = %v, want macConflict", r)
	}
	if p, _ := c.Lookup(macRemote); p != peerB {
		t.Fatalf("conflict changed owner to %v", p)
	}
	// Forwarded frames always win and report the move once.
	if r := c.AddForced(macRemote, peerC); r != macMoved {
		t.Fatalf("AddForced move = %v, want macMoved", r)
	}
	if r := c.AddForced(macRemote, peerC); r != macFresh {
		t.Fatalf("repeat AddForced = %v, want macFresh", r)
	}
	// Quiet for longer than the grace: the container moved here.
	clk.advance(3 * time.Second)
	if r := c.Add(macRemote, us); r != macMoved {
		t.Fatalf("Add after grace = %v, want macMoved", r)
	}
	if p, ok := c.Lookup(macRemote); !ok || p != us {
		t.Fatalf("owner = %v %v, want us", p, ok)
	}
}

func TestMACCacheExpiryAndPeerPurge(t *testing.T) {
	c, clk := newTestCache()
	c.Add(macLocal, us)
	c.AddForced(macRemote, peerB)
	c.AddForced(MAC{2, 0, 0, 0, 0, 3}, peerC)
	if n := c.DeletePeer(peerC); n != 1 {
		t.Fatalf("DeletePeer removed %d, want 1", n)
	}
	clk.advance(9 * time.Minute)
	c.Add(macLocal, us) // refresh (older than refreshEvery)
	clk.advance(2 * time.Minute)
	if n := c.Expire(); n != 1 {
		t.Fatalf("Expire removed %d, want 1", n)
	}
	if _, ok := c.Lookup(macRemote); ok {
		t.Fatal("stale entry survived expiry")
	}
	snap := c.Snapshot()
	if len(snap) != 1 || snap[0].MAC != macLocal || snap[0].Peer != us || !snap[0].LastSeen.Equal(clk.t.Add(-2*time.Minute)) {
		t.Fatalf("snapshot = %+v", snap)
	}
}

func TestRouterStopIdempotent(t *testing.T) {
	ov := &fakeOverlay{name: "sleeve"}
	r := NewNetworkRouter(Config{MACMaxAge: time.Millisecond}, ov)
	r.startStatic(us, staticRoutes{}, &fakeInjector{})
	r.Stop()
	r.Stop()
	if ov.stopped != 1 {
		t.Fatalf("overlay stopped %d times, want 1", ov.stopped)
	}
}
