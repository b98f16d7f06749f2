package dns_test

import (
	"bytes"
	"encoding/gob"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/dns"
	"github.com/seedf75a49c6/weave/test/meshsim"
	"github.com/weaveworks/mesh"
)

// legacyPeer plays a 2.8.1 router on the "nameserver" channel: it encodes
// and decodes with 2.8.1's type shapes (wire_test.go) and encoding/gob
// only, knowing nothing of package dns.
type legacyPeer struct {
	name   mesh.PeerName
	gossip mesh.Gossip
	mu     sync.Mutex
	byKey  map[[4]any]Entry
}

type legacyData struct{ g GossipData }

func (d *legacyData) Encode() [][]byte {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&d.g); err != nil {
		panic(err)
	}
	return [][]byte{buf.Bytes()}
}

func (d *legacyData) Merge(o mesh.GossipData) mesh.GossipData {
	other := o.(*legacyData)
	return &legacyData{GossipData{Timestamp: max(d.g.Timestamp, other.g.Timestamp),
		Entries: append(append(Entries{}, d.g.Entries...), other.g.Entries...)}}
}

func (l *legacyPeer) receive(msg []byte) (mesh.GossipData, error) {
	var g GossipData
	if err := gob.NewDecoder(bytes.NewReader(msg)).Decode(&g); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range g.Entries {
		k := [4]any{e.Hostname, e.Origin, e.ContainerID, e.Addr}
		if old, ok := l.byKey[k]; !ok || e.Version > old.Version || (e.Version == old.Version && e.Tombstone > old.Tombstone) {
			l.byKey[k] = e
		}
	}
	return &legacyData{g}, nil
}

func (l *legacyPeer) OnGossipUnicast(mesh.PeerName, []byte) error { return nil }
func (l *legacyPeer) OnGossipBroadcast(_ mesh.PeerName, msg []byte) (mesh.GossipData, error) {
	return l.receive(msg)
}
func (l *legacyPeer) OnGossip(msg []byte) (mesh.GossipData, error) {
	_, err := l.receive(msg)
	return nil, err
}
func (l *legacyPeer) Gossip() mesh.GossipData {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := GossipData{Timestamp: time.Now().Unix()}
	for _, e := range l.byKey {
		g.Entries = append(g.Entries, e)
	}
	return &legacyData{g}
}

func (l *legacyPeer) lookup(host string) (Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.byKey {
		if e.Hostname == host {
			return e, true
		}
	}
	return Entry{}, false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two real mesh routers, one running our nameserver and one a 2.8.1-shaped
// gossiper: each role's names and tombstones reach the other.
func TestMixedMeshBothRoles(t *testing.T) {
	s := meshsim.New(t, 2, meshsim.Options{})
	p0, p1 := s.Peers[0], s.Peers[1]
	ours, err := dns.New(dns.Config{OurName: p0.Name, Logger: slog.New(slog.DiscardHandler),
		IsKnownPeer: func(x mesh.PeerName) bool { return p0.Mesh.Peers.Fetch(x) != nil }})
	if err != nil {
		t.Fatal(err)
	}
	g0, err := p0.Mesh.NewGossip(dns.ChannelName, ours)
	if err != nil {
		t.Fatal(err)
	}
	ours.SetGossip(g0)
	legacy := &legacyPeer{name: p1.Name, byKey: map[[4]any]Entry{}}
	if legacy.gossip, err = p1.Mesh.NewGossip(dns.ChannelName, legacy); err != nil {
		t.Fatal(err)
	}
	s.Connect(t, 0, 1)
	s.AwaitConverged(t)

	// We send, 2.8.1 receives: a name, then its tombstone.
	if err := ours.AddEntry("db.weave.local.", "c1", netip.MustParseAddr("10.32.0.1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "2.8.1 role learning db", func() bool { e, ok := legacy.lookup("db.weave.local."); return ok && e.Tombstone == 0 })
	if e, _ := legacy.lookup("db.weave.local."); e.Origin != p0.Name || e.Addr != 0x0a200001 || e.ContainerID != "c1" {
		t.Errorf("2.8.1 role decoded %+v", e)
	}
	_ = ours.ContainerDied("c1")
	waitFor(t, "2.8.1 role seeing the tombstone", func() bool { e, _ := legacy.lookup("db.weave.local."); return e.Tombstone != 0 && e.Version == 1 })

	// 2.8.1 sends, we receive: its own entry, broadcast as 2.8.1 does.
	e := Entry{ContainerID: "c9", Origin: p1.Name, Addr: 0x0a280009, Hostname: "web.weave.local.", Version: 0}
	legacy.mu.Lock()
	legacy.byKey[[4]any{e.Hostname, e.Origin, e.ContainerID, e.Addr}] = e
	legacy.mu.Unlock()
	legacy.gossip.GossipBroadcast(&legacyData{GossipData{Timestamp: time.Now().Unix(), Entries: Entries{e}}})
	waitFor(t, "our role resolving web", func() bool { return len(ours.Lookup("web.weave.local.")) == 1 })
	if got := ours.Lookup("WEB.weave.local."); got[0] != netip.MustParseAddr("10.40.0.9") {
		t.Errorf("web = %v", got)
	}
}
