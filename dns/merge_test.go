package dns

import (
	"log/slog"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/weaveworks/mesh"
)

const (
	peerA mesh.PeerName = 0xaa0000000001
	peerB mesh.PeerName = 0xaa0000000002
	peerC mesh.PeerName = 0xaa0000000003
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// recorder is a mesh.Gossip that records broadcasts.
type recorder struct {
	mu   sync.Mutex
	sent []*GossipData
}

func (r *recorder) GossipUnicast(mesh.PeerName, []byte) error { return nil }
func (r *recorder) GossipBroadcast(u mesh.GossipData) {
	r.mu.Lock()
	r.sent = append(r.sent, u.(*GossipData))
	r.mu.Unlock()
}
func (r *recorder) GossipNeighbourSubset(u mesh.GossipData) { r.GossipBroadcast(u) }
func (r *recorder) last(t *testing.T) *GossipData {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sent) == 0 {
		t.Fatal("nothing was broadcast")
	}
	return r.sent[len(r.sent)-1]
}

var (
	t0    = time.Unix(1_800_000_000, 0)
	quiet = slog.New(slog.DiscardHandler)
)

func newNS(t *testing.T, us mesh.PeerName, c *clock, known ...mesh.PeerName) (*Nameserver, *recorder) {
	t.Helper()
	ks := map[mesh.PeerName]bool{us: true}
	for _, k := range known {
		ks[k] = true
	}
	n, err := New(Config{OurName: us, Now: c.Now, Logger: quiet, IsKnownPeer: func(p mesh.PeerName) bool { return ks[p] }})
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	n.SetGossip(r)
	return n, r
}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

func entry(host string, origin mesh.PeerName, id, addr string, version int, tomb int64) Entry {
	return Entry{Hostname: host, Origin: origin, ContainerID: id, Addr: addrUint(ip(addr)), Version: version, Tombstone: tomb}
}

func payload(ts int64, es ...Entry) []byte {
	return (&GossipData{Timestamp: ts, Entries: es}).Encode()[0]
}

func mustGossip(t *testing.T, n *Nameserver, msg []byte) *GossipData {
	t.Helper()
	d, err := n.OnGossip(msg)
	if err != nil {
		t.Fatalf("OnGossip: %v", err)
	}
	if d == nil {
		return nil
	}
	return d.(*GossipData)
}

func find(t *testing.T, n *Nameserver, host string, origin mesh.PeerName) Entry {
	t.Helper()
	for _, e := range n.Entries() {
		if e.Hostname == host && e.Origin == origin {
			return e
		}
	}
	t.Fatalf("no entry %s from %s in %+v", host, origin, n.Entries())
	return Entry{}
}

// Reference §6.7: same record => higher version wins, equal version =>
// larger tombstone wins, lower versions are ignored; the delta says so.
func TestMergeVectors(t *testing.T) {
	c := &clock{t: t0}
	now := t0.Unix()
	for _, tc := range []struct {
		name      string
		have, in  Entry
		want      Entry
		wantDelta bool
	}{
		{"new record", Entry{}, entry("db.weave.local.", peerB, "c1", "10.32.0.1", 0, 0), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 0, 0), true},
		{"higher version", entry("db.weave.local.", peerB, "c1", "10.32.0.1", 1, 0), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 2, now), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 2, now), true},
		{"lower version ignored", entry("db.weave.local.", peerB, "c1", "10.32.0.1", 3, 0), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 2, now), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 3, 0), false},
		{"equal version, tombstone wins", entry("db.weave.local.", peerB, "c1", "10.32.0.1", 2, 0), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 2, now), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 2, now), true},
		{"equal version, later tombstone wins", entry("db.weave.local.", peerB, "c1", "10.32.0.1", 2, now-5), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 2, now), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 2, now), true},
		{"equal version, earlier tombstone loses", entry("db.weave.local.", peerB, "c1", "10.32.0.1", 2, now), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 2, 0), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 2, now), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, _ := newNS(t, peerA, c, peerB)
			if tc.have.Hostname != "" {
				mustGossip(t, n, payload(now, tc.have))
			}
			d := mustGossip(t, n, payload(now, tc.in))
			got := find(t, n, tc.want.Hostname, tc.want.Origin)
			if got.Version != tc.want.Version || got.Tombstone != tc.want.Tombstone {
				t.Errorf("entry = v%d tomb %d, want v%d tomb %d", got.Version, got.Tombstone, tc.want.Version, tc.want.Tombstone)
			}
			if (d != nil) != tc.wantDelta {
				t.Errorf("delta = %+v, want delta %v", d, tc.wantDelta)
			}
			if len(n.Entries()) != 1 {
				t.Errorf("entries = %+v, want one", n.Entries())
			}
		})
	}
}

// Records differ by any of hostname, origin, container or address, so two
// containers with one name give two A records.
func TestRecordIdentity(t *testing.T) {
	c := &clock{t: t0}
	n, _ := newNS(t, peerA, c, peerB)
	mustGossip(t, n, payload(t0.Unix(),
		entry("db.weave.local.", peerB, "c1", "10.32.0.1", 0, 0),
		entry("db.weave.local.", peerB, "c2", "10.32.0.2", 0, 0),
		entry("DB.weave.local.", peerB, "c1", "10.32.0.1", 0, 0),
		entry("db.weave.local.", peerB, "c1", "10.32.0.3", 0, 0)))
	if got := len(n.Entries()); got != 4 {
		t.Fatalf("entries = %d, want 4", got)
	}
	if got := n.Lookup("Db.Weave.Local."); len(got) != 4 {
		t.Errorf("Lookup any case = %v, want 4 addresses", got)
	}
}

// Gossip stamped beyond ±15 min of our clock is refused; at the edge it is not.
func TestClockSkewWindow(t *testing.T) {
	c := &clock{t: t0}
	n, _ := newNS(t, peerA, c, peerB)
	e := entry("db.weave.local.", peerB, "c1", "10.32.0.1", 0, 0)
	for _, skew := range []int64{-901, 901} {
		if _, err := n.OnGossip(payload(t0.Unix()+skew, e)); err == nil {
			t.Errorf("skew %ds accepted", skew)
		}
	}
	if len(n.Entries()) != 0 {
		t.Fatal("refused gossip was merged")
	}
	for _, skew := range []int64{-900, 900} {
		if _, err := n.OnGossipBroadcast(peerB, payload(t0.Unix()+skew, e)); err != nil {
			t.Errorf("skew %ds refused: %v", skew, err)
		}
	}
}

func TestUnknownPeersIgnoredAndGonePeersDropped(t *testing.T) {
	c := &clock{t: t0}
	n, _ := newNS(t, peerA, c, peerB)
	mustGossip(t, n, payload(t0.Unix(),
		entry("db.weave.local.", peerB, "c1", "10.32.0.1", 0, 0),
		entry("web.weave.local.", peerC, "c9", "10.32.0.9", 0, 0)))
	if got := n.Lookup("web.weave.local."); len(got) != 0 {
		t.Errorf("entry of unknown peer accepted: %v", got)
	}
	n.PeerGone(peerB)
	if got := n.Entries(); len(got) != 0 {
		t.Errorf("entries of a gone peer kept: %+v", got)
	}
}

func TestAddDeleteRevive(t *testing.T) {
	c := &clock{t: t0}
	n, r := newNS(t, peerA, c)
	if err := n.AddEntry("db.weave.local", "c1", ip("10.32.0.1")); err != nil {
		t.Fatal(err)
	}
	if e := r.last(t).Entries[0]; e.Hostname != "db.weave.local." || e.Version != 0 || !e.Live() || e.Origin != peerA {
		t.Errorf("broadcast %+v", e)
	}
	c.Add(time.Second)
	if k, err := n.Delete(Match{ContainerID: "c1"}); err != nil || k != 1 {
		t.Fatalf("Delete = %d, %v", k, err)
	}
	if e := r.last(t).Entries[0]; e.Version != 1 || e.Tombstone != t0.Unix()+1 {
		t.Errorf("tombstone broadcast %+v", e)
	}
	if got := n.Lookup("db.weave.local."); len(got) != 0 {
		t.Errorf("tombstoned name resolves: %v", got)
	}
	if err := n.AddEntry("db.weave.local.", "c1", ip("10.32.0.1")); err != nil {
		t.Fatal(err)
	}
	if e := r.last(t).Entries[0]; e.Version != 2 || !e.Live() {
		t.Errorf("revival broadcast %+v", e)
	}
	for _, bad := range []string{"db.other.", "weave.local.", "bad..name"} {
		if err := n.AddEntry(bad, "c1", ip("10.32.0.1")); err == nil {
			t.Errorf("AddEntry(%q) accepted", bad)
		}
	}
	if err := n.AddEntry("v6.weave.local.", "c1", ip("fd00::1")); err == nil {
		t.Error("IPv6 accepted")
	}
}

// Only the origin deletes: tombstoning does not touch others' entries.
func TestDeleteOnlyOwn(t *testing.T) {
	c := &clock{t: t0}
	n, _ := newNS(t, peerA, c, peerB)
	mustGossip(t, n, payload(t0.Unix(), entry("db.weave.local.", peerB, "c1", "10.32.0.1", 0, 0)))
	if k, _ := n.Delete(Match{Hostname: "*"}); k != 0 {
		t.Errorf("deleted %d entries of another peer", k)
	}
}

func TestTombstonesPurgedAfter30Minutes(t *testing.T) {
	c := &clock{t: t0}
	n, _ := newNS(t, peerA, c, peerB)
	_ = n.AddEntry("db.weave.local.", "c1", ip("10.32.0.1"))
	_ = n.AddEntry("live.weave.local.", "c2", ip("10.32.0.2"))
	_ = n.ContainerDied("c1")
	c.Add(TombstoneTimeout)
	n.PurgeTombstones()
	if len(n.Entries()) != 2 {
		t.Fatalf("tombstone purged at exactly 30 min: %+v", n.Entries())
	}
	c.Add(time.Second)
	n.PurgeTombstones()
	if es := n.Entries(); len(es) != 1 || es[0].Hostname != "live.weave.local." {
		t.Errorf("after 30 min 1 s: %+v", es)
	}
}

// A restarted peer that lost an entry others still hold live tombstones
// it with a higher version; one it holds differently gets its view back.
func TestOriginReasserts(t *testing.T) {
	c := &clock{t: t0}
	n, r := newNS(t, peerA, c, peerB)
	d := mustGossip(t, n, payload(t0.Unix(), entry("old.weave.local.", peerA, "c0", "10.32.0.7", 4, 0)))
	e := find(t, n, "old.weave.local.", peerA)
	if e.Version != 5 || e.Live() {
		t.Errorf("stale entry of ours = %+v, want tombstone v5", e)
	}
	if d == nil || len(d.Entries) != 1 || r.last(t).Entries[0].Version != 5 {
		t.Errorf("correction not forwarded/broadcast: delta %+v", d)
	}
	_ = n.AddEntry("db.weave.local.", "c1", ip("10.32.0.1"))
	mustGossip(t, n, payload(t0.Unix(), entry("db.weave.local.", peerA, "c1", "10.32.0.1", 3, t0.Unix())))
	if e := find(t, n, "db.weave.local.", peerA); e.Version != 4 || !e.Live() {
		t.Errorf("our live entry after a foreign tombstone = %+v, want live v4", e)
	}
	// Agreement (both tombstones) is merged as usual, no broadcast.
	before := len(r.sent)
	mustGossip(t, n, payload(t0.Unix(), entry("old.weave.local.", peerA, "c0", "10.32.0.7", 5, t0.Unix())))
	if len(r.sent) != before {
		t.Errorf("agreement triggered a broadcast")
	}
}

// Our entries survive a restart (persisted in the data dir).
func TestPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dns.json")
	c := &clock{t: t0}
	n, err := New(Config{OurName: peerA, StorePath: path, Now: c.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	_ = n.AddEntry("db.weave.local.", "c1", ip("10.32.0.1"))
	_ = n.AddEntry("gone.weave.local.", "c2", ip("10.32.0.2"))
	_ = n.ContainerDied("c2")
	n2, err := New(Config{OurName: peerA, StorePath: path, Now: c.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if got := n2.Lookup("db.weave.local."); len(got) != 1 || got[0] != ip("10.32.0.1") {
		t.Errorf("after restart db = %v", got)
	}
	if e := find(t, n2, "gone.weave.local.", peerA); e.Live() || e.Version != 1 {
		t.Errorf("after restart tombstone = %+v", e)
	}
	n3, err := New(Config{OurName: peerB, StorePath: path, Now: c.Now, Logger: quiet})
	if err != nil || len(n3.Entries()) != 0 {
		t.Errorf("another peer name loaded %+v (%v)", n3.Entries(), err)
	}
}

func TestGossipDataMerge(t *testing.T) {
	a := &GossipData{Timestamp: 10, Entries: Entries{entry("a.weave.local.", peerA, "c1", "10.0.0.1", 1, 0)}}
	b := &GossipData{Timestamp: 20, Entries: Entries{entry("a.weave.local.", peerA, "c1", "10.0.0.1", 2, 5), entry("b.weave.local.", peerA, "c2", "10.0.0.2", 0, 0)}}
	m := a.Merge(b).(*GossipData)
	if m.Timestamp != 20 || len(m.Entries) != 2 || m.Entries[0].Version != 2 {
		t.Errorf("merge = %+v", m)
	}
	if a.Entries[0].Version != 1 || len(a.Entries) != 1 {
		t.Errorf("merge modified its receiver: %+v", a)
	}
}
