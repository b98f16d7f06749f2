package dns

import (
	"bytes"
	"cmp"
	"encoding/gob"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/weaveworks/mesh"
)

// Entry is one name record, with 2.8.1's gob field names, kinds and order
// (Addr is an IPv4 address as a big-endian uint32, like Weave's
// address.Address). Only the exported fields travel.
type Entry struct {
	ContainerID string
	Origin      mesh.PeerName
	Addr        uint32
	Hostname    string // fully qualified, as given
	Version     int
	Tombstone   int64 // Unix seconds of deletion; 0 = live

	lower string // lower-cased Hostname, the lookup key
}

// Entries is a list of entries; its type name is part of the gob stream.
type Entries []Entry

// GossipData is the payload of every message on the "nameserver" channel.
// The embedded Entries is 2.8.1's layout (gob field "Entries").
type GossipData struct {
	Timestamp int64 // Unix seconds at the sender
	Entries
}

// IP returns the entry's address.
func (e *Entry) IP() netip.Addr {
	return netip.AddrFrom4([4]byte{byte(e.Addr >> 24), byte(e.Addr >> 16), byte(e.Addr >> 8), byte(e.Addr)})
}

// Live reports whether the entry is not tombstoned.
func (e *Entry) Live() bool { return e.Tombstone == 0 }

func addrUint(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// sameRecord reports whether two entries are versions of one record: the
// identity is (hostname, origin, container, address).
func (e *Entry) sameRecord(o *Entry) bool {
	return e.Hostname == o.Hostname && e.Origin == o.Origin && e.ContainerID == o.ContainerID && e.Addr == o.Addr
}

// newer reports whether o should replace e (same record): higher version
// wins; on equal versions the later tombstone wins.
func (e *Entry) newer(o *Entry) bool {
	return o.Version > e.Version || (o.Version == e.Version && o.Tombstone > e.Tombstone)
}

// compareStored orders the local replica: case-insensitively by hostname,
// then origin, container, address (exact hostname last, so it is total).
func compareStored(a, b Entry) int {
	return cmp.Or(strings.Compare(a.lower, b.lower), cmp.Compare(a.Origin, b.Origin),
		strings.Compare(a.ContainerID, b.ContainerID), cmp.Compare(a.Addr, b.Addr),
		strings.Compare(a.Hostname, b.Hostname))
}

// compareWire orders entries on the wire as 2.8.1 does: case-sensitively
// by hostname, then origin, container, address.
func compareWire(a, b Entry) int {
	return cmp.Or(strings.Compare(a.Hostname, b.Hostname), cmp.Compare(a.Origin, b.Origin),
		strings.Compare(a.ContainerID, b.ContainerID), cmp.Compare(a.Addr, b.Addr))
}

// Encode implements mesh.GossipData: one gob value from a fresh encoder,
// entries in wire order.
func (g *GossipData) Encode() [][]byte {
	out := GossipData{Timestamp: g.Timestamp, Entries: slices.Clone(g.Entries)}
	slices.SortFunc(out.Entries, compareWire)
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&out); err != nil {
		panic(fmt.Sprintf("encode DNS gossip: %v", err)) // only plain fields: cannot fail
	}
	return [][]byte{buf.Bytes()}
}

// Merge implements mesh.GossipData: the union of both, newest version of
// each record, the later timestamp. Neither input is modified.
func (g *GossipData) Merge(other mesh.GossipData) mesh.GossipData {
	o, ok := other.(*GossipData)
	if !ok {
		return g
	}
	out := &GossipData{Timestamp: max(g.Timestamp, o.Timestamp), Entries: slices.Clone(g.Entries)}
	out.Entries.normalize()
	out.Entries.merge(o.Entries)
	return out
}

// Errors of DecodeGossip.
var (
	ErrMalformed = errors.New("malformed DNS gossip")
)

// maxGossip bounds a payload (mesh frames are at most 10 MiB).
const maxGossip = 10 << 20

// DecodeGossip parses a "nameserver" payload. Entries are checked (hostname
// present), lower-cased and sorted for the replica; duplicates keep the
// newest version.
func DecodeGossip(msg []byte) (*GossipData, error) {
	if len(msg) > maxGossip {
		return nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(msg))
	}
	var g GossipData
	if err := gob.NewDecoder(bytes.NewReader(msg)).Decode(&g); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	for i := range g.Entries {
		if g.Entries[i].Hostname == "" {
			return nil, fmt.Errorf("%w: entry %d has no hostname", ErrMalformed, i)
		}
	}
	g.Entries.normalize()
	return &g, nil
}

// normalize fills the lookup keys, sorts into replica order and folds
// duplicate records into their newest version.
func (es *Entries) normalize() {
	for i := range *es {
		(*es)[i].lower = strings.ToLower((*es)[i].Hostname)
	}
	slices.SortFunc(*es, compareStored)
	out := (*es)[:0]
	for _, e := range *es {
		if n := len(out); n > 0 && out[n-1].sameRecord(&e) {
			if out[n-1].newer(&e) {
				out[n-1] = e
			}
			continue
		}
		out = append(out, e)
	}
	*es = out
}

// find returns the index of e's record, or where it would go.
func (es Entries) find(e *Entry) (int, bool) {
	return slices.BinarySearchFunc(es, *e, compareStored)
}

// merge folds incoming (normalized) entries into es, returning those that
// were new or newer than ours.
func (es *Entries) merge(incoming Entries) Entries {
	var changed Entries
	for _, e := range incoming {
		e.lower = strings.ToLower(e.Hostname)
		i, found := es.find(&e)
		switch {
		case !found:
			*es = slices.Insert(*es, i, e)
		case (*es)[i].newer(&e):
			(*es)[i] = e
		default:
			continue
		}
		changed = append(changed, e)
	}
	return changed
}

// filter keeps the entries for which keep returns true.
func (es *Entries) filter(keep func(*Entry) bool) {
	*es = slices.DeleteFunc(*es, func(e Entry) bool { return !keep(&e) })
}

// lookup returns the entries named name, any case.
func (es Entries) lookup(name string) Entries {
	lower := strings.ToLower(name)
	i, _ := slices.BinarySearchFunc(es, lower, func(e Entry, k string) int { return strings.Compare(e.lower, k) })
	j := i
	for j < len(es) && es[j].lower == lower {
		j++
	}
	return es[i:j]
}

// parseIPv4 parses a dotted-quad address.
func parseIPv4(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Addr{}, fmt.Errorf("invalid IPv4 address %q", s)
	}
	return a, nil
}
