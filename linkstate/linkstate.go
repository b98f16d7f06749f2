// Package linkstate gossips a small summary of each router's own links
// (data path, encryption, MTU, fallback reason, recent traffic) among our
// routers, so that every router can show the whole mesh's links, not
// only its own.
//
// The summaries travel on their own mesh gossip channel, ChannelName.
// Weave Net 2.8.1 routers have no gossiper for it: mesh gives an unknown
// channel a "surrogate" that relays broadcasts and gossip unchanged and
// drops unicasts, so 2.8.1 peers pass the summaries on and see nothing
// else change (docs/wire-compat.md). What one router adds is bounded:
// at most MaxLinks links of bounded strings per summary, one broadcast
// per MinInterval at most, and a table of at most MaxPeers summaries.
package linkstate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/weaveworks/mesh"
)

// ChannelName is the mesh gossip channel of the summaries.
const ChannelName = "linkstate"

// Bounds on what one router gossips and keeps.
const (
	MaxLinks    = 128              // links per summary; more are dropped (counted in Truncated)
	MaxString   = 96               // bytes per string field
	MaxPeers    = 2048             // summaries kept
	MaxMessage  = 4 << 20          // bytes of one received message
	MinInterval = time.Second      // between two broadcasts of our own summary
	Refresh     = 10 * time.Second // our summary is re-broadcast this often even unchanged (traffic rates)
)

// Link is one router's view of its link to a peer.
type Link struct {
	Peer      string  `json:"p"`             // remote peer name
	Address   string  `json:"a,omitempty"`   // remote address of the mesh connection
	State     string  `json:"s"`             // established, connecting, pending, retrying, failed
	Overlay   string  `json:"o,omitempty"`   // data path in use: fastdp, sleeve, "" when none
	Encrypted bool    `json:"e,omitempty"`   // the data path is encrypted
	MTU       int     `json:"m,omitempty"`   // overlay MTU
	Fallback  string  `json:"f,omitempty"`   // why the preferred data path is not used
	Cipher    string  `json:"c,omitempty"`   // sleeve cipher
	TxFPS     float64 `json:"tx,omitempty"`  // frames per second sent recently
	RxFPS     float64 `json:"rx,omitempty"`  // frames per second received recently
	TxBPS     float64 `json:"tb,omitempty"`  // bytes per second sent recently (fastdp: the VXLAN device's count; sleeve: UDP payload bytes)
	RxBPS     float64 `json:"rb,omitempty"`  // bytes per second received recently
	RTT       int64   `json:"rtt,omitempty"` // µs, round trip to the peer; 0 = unknown
	RTTBy     string  `json:"rk,omitempty"`  // how RTT was measured: RTTHeartbeat or RTTProbe
}

// The ways a link's RTT is measured.
const (
	RTTHeartbeat = "heartbeat" // fastdp: the VXLAN heartbeat and its ack
	RTTProbe     = "probe"     // sleeve: the liveness detector's UDP probe and its ack, over the underlay
)

// Summary is one router's links at one moment.
type Summary struct {
	Peer      string `json:"peer"`
	NickName  string `json:"nick,omitempty"`
	Software  string `json:"sw,omitempty"` // the router's version string
	Version   uint64 `json:"v"`            // grows with every new summary of Peer
	Time      int64  `json:"t"`            // unix seconds when made
	Links     []Link `json:"links"`
	Truncated int    `json:"trunc,omitempty"` // links left out to respect MaxLinks
}

// sameFacts reports whether two summaries say the same apart from
// version, time, traffic rates and RTT (those ride on the next Refresh).
func sameFacts(a, b Summary) bool {
	if a.Peer != b.Peer || a.NickName != b.NickName || a.Software != b.Software || a.Truncated != b.Truncated ||
		len(a.Links) != len(b.Links) {
		return false
	}
	for i := range a.Links {
		x, y := a.Links[i], b.Links[i]
		x.TxFPS, x.RxFPS, y.TxFPS, y.RxFPS = 0, 0, 0, 0
		x.TxBPS, x.RxBPS, y.TxBPS, y.RxBPS = 0, 0, 0, 0
		x.RTT, y.RTT, x.RTTBy, y.RTTBy = 0, 0, "", ""
		if x != y {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) <= MaxString {
		return s
	}
	return s[:MaxString]
}

// bound makes s respect the size bounds, sorting links by peer.
func bound(s Summary) Summary {
	s.Peer, s.NickName, s.Software = clip(s.Peer), clip(s.NickName), clip(s.Software)
	links := slices.Clone(s.Links)
	slices.SortFunc(links, func(a, b Link) int { return cmp.Compare(a.Peer, b.Peer) })
	if len(links) > MaxLinks {
		s.Truncated += len(links) - MaxLinks
		links = links[:MaxLinks]
	}
	for i := range links {
		l := &links[i]
		l.Peer, l.Address, l.State, l.Overlay = clip(l.Peer), clip(l.Address), clip(l.State), clip(l.Overlay)
		l.Fallback, l.Cipher = clip(l.Fallback), clip(l.Cipher)
	}
	s.Links = links
	return s
}

// Table holds the latest summary of every router that sent one and
// gossips our own. It implements mesh.Gossiper. Safe for concurrent use.
type Table struct {
	self mesh.PeerName
	now  func() time.Time

	mu       sync.Mutex
	gossip   mesh.Gossip
	all      map[string]Summary
	version  uint64
	lastSent time.Time
	lastOwn  Summary
	changed  chan struct{}
}

var _ mesh.Gossiper = (*Table)(nil)

// New returns an empty table for router self.
func New(self mesh.PeerName) *Table {
	return &Table{self: self, now: time.Now, all: map[string]Summary{}, changed: make(chan struct{})}
}

// SetGossip gives the table its channel (from mesh.Router.NewGossip).
func (t *Table) SetGossip(g mesh.Gossip) {
	t.mu.Lock()
	t.gossip = g
	t.mu.Unlock()
}

// Changed returns a channel closed at the next change of the table.
func (t *Table) Changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}

func (t *Table) notifyLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// SetOwn records our own summary and broadcasts it when its facts
// changed or Refresh has passed, but never twice within MinInterval. It
// reports whether it broadcast. The version and time are set here.
func (t *Table) SetOwn(s Summary) bool {
	s.Peer = t.self.String()
	s = bound(s)
	t.mu.Lock()
	now := t.now()
	since := now.Sub(t.lastSent)
	if since < MinInterval || (sameFacts(s, t.lastOwn) && since < Refresh) {
		t.mu.Unlock()
		return false
	}
	// A restarted router starts above what it may have sent before.
	t.version = max(t.version+1, uint64(now.UnixNano()))
	s.Version, s.Time = t.version, now.Unix()
	t.lastOwn, t.lastSent = s, now
	t.all[s.Peer] = s
	t.notifyLocked()
	g := t.gossip
	t.mu.Unlock()
	if g != nil {
		g.GossipBroadcast(&data{sums: map[string]Summary{s.Peer: s}})
	}
	return true
}

// All returns a copy of every summary, by peer name.
func (t *Table) All() map[string]Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.all)
}

// Prune drops the summaries of peers keep rejects (peers gone from the
// topology); ours stays.
func (t *Table) Prune(keep func(peer string) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.all)
	maps.DeleteFunc(t.all, func(p string, _ Summary) bool { return p != t.self.String() && !keep(p) })
	if len(t.all) != n {
		t.notifyLocked()
	}
}

// merge applies received summaries and returns those that were new.
func (t *Table) merge(in map[string]Summary) map[string]Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]Summary{}
	for p, s := range in {
		if p != s.Peer || p == t.self.String() {
			continue // our own summary only we make
		}
		old, ok := t.all[p]
		if ok && old.Version >= s.Version {
			continue
		}
		if !ok && len(t.all) >= MaxPeers {
			continue
		}
		s = bound(s)
		t.all[p] = s
		out[p] = s
	}
	if len(out) > 0 {
		t.notifyLocked()
	}
	return out
}

// OnGossipUnicast implements mesh.Gossiper; the table sends none.
func (t *Table) OnGossipUnicast(_ mesh.PeerName, _ []byte) error { return nil }

// OnGossipBroadcast implements mesh.Gossiper.
func (t *Table) OnGossipBroadcast(_ mesh.PeerName, update []byte) (mesh.GossipData, error) {
	in, err := Decode(update)
	if err != nil {
		return nil, err
	}
	return &data{sums: t.merge(in)}, nil
}

// OnGossip implements mesh.Gossiper.
func (t *Table) OnGossip(update []byte) (mesh.GossipData, error) {
	in, err := Decode(update)
	if err != nil {
		return nil, err
	}
	news := t.merge(in)
	if len(news) == 0 {
		return nil, nil
	}
	return &data{sums: news}, nil
}

// Gossip implements mesh.Gossiper: the whole table.
func (t *Table) Gossip() mesh.GossipData {
	all := t.All()
	if len(all) == 0 {
		return nil
	}
	return &data{sums: all}
}

// data is a set of summaries as mesh.GossipData.
type data struct{ sums map[string]Summary }

// Encode implements mesh.GossipData: one JSON message.
func (d *data) Encode() [][]byte { return [][]byte{Encode(d.sums)} }

// Merge implements mesh.GossipData, keeping the newer summary per peer.
func (d *data) Merge(other mesh.GossipData) mesh.GossipData {
	out := maps.Clone(d.sums)
	o, ok := other.(*data)
	if !ok {
		return &data{sums: out}
	}
	for p, s := range o.sums {
		if old, ok := out[p]; !ok || s.Version > old.Version {
			out[p] = s
		}
	}
	return &data{sums: out}
}

// Encode is the wire form of summaries: a JSON array sorted by peer.
func Encode(sums map[string]Summary) []byte {
	list := make([]Summary, 0, len(sums))
	for _, p := range slices.Sorted(maps.Keys(sums)) {
		list = append(list, sums[p])
	}
	b, _ := json.Marshal(list) // plain data: cannot fail
	return b
}

// Decode parses Encode's form, refusing oversized or malformed messages.
func Decode(b []byte) (map[string]Summary, error) {
	if len(b) > MaxMessage {
		return nil, fmt.Errorf("linkstate: message of %d bytes exceeds %d", len(b), MaxMessage)
	}
	var list []Summary
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("linkstate: decode: %w", err)
	}
	if len(list) > MaxPeers {
		return nil, fmt.Errorf("linkstate: %d summaries exceed %d", len(list), MaxPeers)
	}
	out := make(map[string]Summary, len(list))
	for _, s := range list {
		if s.Peer == "" {
			return nil, errors.New("linkstate: summary without a peer name")
		}
		if _, err := mesh.PeerNameFromString(s.Peer); err != nil {
			return nil, fmt.Errorf("linkstate: summary of %q: %w", clip(s.Peer), err)
		}
		out[s.Peer] = s
	}
	return out, nil
}
