package ipam

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/seedf75a49c6/weave/ipam/ring"
	"github.com/weaveworks/mesh"
	bolt "go.etcd.io/bbolt"
)

// ErrCorrupt marks a database that cannot be read. The router must stop:
// the data is never silently wiped.
var ErrCorrupt = errors.New("IPAM database unreadable")

// OwnedData is one container's addresses, as Weave persists them.
type OwnedData struct {
	IsContainer bool
	Cidrs       []address.CIDR
}

// Persisted is what survives a restart.
type Persisted struct {
	PeerName mesh.PeerName
	Ring     *ring.Ring // nil until the ring exists
	Owned    map[string]OwnedData
	// Tentative are unacknowledged rmpeer takeovers (our own key, not
	// Weave's): after a restart they must still not be allocatable.
	Tentative []TentativeData
}

// TentativeData is one persisted unacknowledged takeover.
type TentativeData struct {
	Token   address.Address
	From    mesh.PeerName
	Range   address.Range
	Version uint32
	Need    []mesh.PeerName
}

// Store persists IPAM state. Load returns (nil, nil) for an empty store.
type Store interface {
	Load() (*Persisted, error)
	Save(*Persisted) error
}

// Weave 2.8.1's db layout: bucket "top", gob values, key "version" {1,0}.
var (
	bucketTop      = []byte("top")
	keyVersion     = []byte("version")
	keyPeerName    = []byte("peername")
	keyRing        = []byte("ring")
	keyOwned       = []byte("ownedAddresses")
	keyTentative   = []byte("weave-successor:tentativeTakeovers")
	currentVersion = []byte{1, 0}
)

// BoltStore keeps IPAM state in a bbolt file, with Weave's key names.
type BoltStore struct{ db *bolt.DB }

// OpenBoltStore opens (creating if absent) the database at path. An
// unreadable or incompatible file is an error wrapping ErrCorrupt.
func OpenBoltStore(path string) (s *BoltStore, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see ReadWeaveDataFile
	defer func() {                                           // bbolt panics on some corruptions
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("open IPAM database %s: %w: %v", path, ErrCorrupt, r)
		}
	}()
	if err := checkBoltFile(path); err != nil {
		return nil, fmt.Errorf("open IPAM database %s: %w: %w (move the file aside to start afresh)", path, ErrCorrupt, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open IPAM database %s: %w: %w (move the file aside to start afresh)", path, ErrCorrupt, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketTop)
		if err != nil {
			return err
		}
		v := b.Get(keyVersion)
		if v == nil {
			return b.Put(keyVersion, currentVersion)
		}
		if len(v) != 2 || v[0] != currentVersion[0] {
			return fmt.Errorf("unsupported database version %v", v)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open IPAM database %s: %w: %w", path, ErrCorrupt, err)
	}
	return &BoltStore{db: db}, nil
}

// Close closes the database.
func (s *BoltStore) Close() error { return s.db.Close() }

// Load reads the persisted state.
func (s *BoltStore) Load() (p *Persisted, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see ReadWeaveDataFile
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("load IPAM state: %w: %v", ErrCorrupt, r)
		}
	}()
	err = s.db.View(func(tx *bolt.Tx) error {
		p, err = loadBucket(tx.Bucket(bucketTop))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("load IPAM state: %w: %w", ErrCorrupt, err)
	}
	return p, nil
}

// loadBucket decodes the state in Weave's bucket "top"; (nil, nil) when it
// holds no peer name. Every value is checked by checkGob before gob
// decodes it, so a damaged count cannot make gob spin or allocate.
func loadBucket(b *bolt.Bucket) (*Persisted, error) {
	raw := b.Get(keyPeerName)
	if raw == nil {
		return nil, nil
	}
	p := &Persisted{}
	if err := gobDecode(raw, &p.PeerName); err != nil {
		return nil, fmt.Errorf("key peername: %w", err)
	}
	if raw := b.Get(keyRing); raw != nil {
		if err := gobDecode(raw, &p.Ring); err != nil {
			return nil, fmt.Errorf("key ring: %w", err)
		}
		if p.Ring == nil {
			return nil, errors.New("key ring: empty value")
		}
		if err := p.Ring.CheckInvariants(); err != nil {
			return nil, fmt.Errorf("key ring: %w", err)
		}
	}
	if raw := b.Get(keyOwned); raw != nil {
		if err := gobDecode(raw, &p.Owned); err != nil {
			return nil, fmt.Errorf("key ownedAddresses: %w", err)
		}
	}
	if raw := b.Get(keyTentative); raw != nil {
		if err := gobDecode(raw, &p.Tentative); err != nil {
			return nil, fmt.Errorf("key %s: %w", keyTentative, err)
		}
	}
	return p, nil
}

// Save writes the state in one transaction.
func (s *BoltStore) Save(p *Persisted) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTop)
		// A key with nothing to record is deleted: no ring yet, and no
		// takeovers pending (then the file holds 2.8.1's keys only).
		for _, kv := range []struct {
			k    []byte
			v    any
			none bool
		}{
			{keyPeerName, p.PeerName, false},
			{keyRing, p.Ring, p.Ring == nil},
			{keyOwned, p.Owned, false},
			{keyTentative, p.Tentative, len(p.Tentative) == 0},
		} {
			if kv.none {
				if err := b.Delete(kv.k); err != nil {
					return err
				}
				continue
			}
			var buf bytes.Buffer
			if err := gob.NewEncoder(&buf).Encode(kv.v); err != nil {
				return err
			}
			if err := b.Put(kv.k, buf.Bytes()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save IPAM state: %w", err)
	}
	return nil
}

func gobDecode(raw []byte, v any) error {
	if err := checkGob(raw); err != nil {
		return err
	}
	return gob.NewDecoder(bytes.NewReader(raw)).Decode(v)
}

// restore loads persisted state into a new allocator (before Start).
func (a *Allocator) restore() error {
	if a.cfg.Store == nil {
		return nil
	}
	p, err := a.cfg.Store.Load()
	if err != nil {
		return fmt.Errorf("restore IPAM state: %w", err)
	}
	if p == nil {
		return nil
	}
	if p.PeerName != a.cfg.OurName {
		a.log.Warn("discarding persisted IPAM state of another peer name", "stored", p.PeerName, "peer", a.cfg.OurName)
		return nil
	}
	if p.Ring != nil && p.Ring.Range() != a.cfg.Universe.Range() {
		a.log.Warn("discarding persisted IPAM ring: --ipalloc-range changed",
			"stored", p.Ring.Range(), "range", a.cfg.Universe)
		p.Ring, p.Owned = nil, nil
	}
	if p.Ring != nil {
		p.Ring.Peer = a.cfg.OurName
		a.ring = p.Ring
		for _, t := range p.Tentative {
			tk := &takeover{from: t.From, rng: t.Range, version: t.Version, need: map[mesh.PeerName]bool{}}
			for _, q := range t.Need {
				tk.need[q] = true
			}
			a.tentative[t.Token] = tk
		}
		a.syncSpace()
	}
	for ident, od := range p.Owned {
		for _, c := range od.Cidrs {
			a.record(ident, c)
			if a.space.Owns(c.Addr) && !a.space.IsAllocated(c.Addr) {
				_ = a.space.Claim(c.Addr)
			}
		}
	}
	a.log.Info("restored IPAM state", "containers", len(a.owned), "ring", !a.ring.Empty())
	return nil
}

// persist saves state when it changed since the last save.
func (a *Allocator) persist() {
	if a.cfg.Store == nil {
		return
	}
	p := &Persisted{PeerName: a.cfg.OurName, Owned: map[string]OwnedData{}}
	if !a.ring.Empty() {
		p.Ring = a.ring
	}
	for ident, cs := range a.owned {
		// IsContainer false: a Weave Net 2.8.1 started on this file (a
		// rollback) never prunes these at start as "not a running Docker
		// container", so it cannot hand out an address still in use.
		p.Owned[ident] = OwnedData{IsContainer: false, Cidrs: cs}
	}
	for tok, t := range a.tentative {
		td := TentativeData{Token: tok, From: t.from, Range: t.rng, Version: t.version}
		for q := range t.need {
			td.Need = append(td.Need, q)
		}
		slices.Sort(td.Need)
		p.Tentative = append(p.Tentative, td)
	}
	slices.SortFunc(p.Tentative, func(x, y TentativeData) int { return int(int64(x.Token) - int64(y.Token)) })
	fp := fingerprint(p)
	if fp == a.lastSaved {
		return
	}
	if err := a.cfg.Store.Save(p); err != nil {
		a.log.Error("persist IPAM state", "err", err)
		return
	}
	a.lastSaved = fp
}

// fingerprint is a deterministic digest of p (gob map order is random).
func fingerprint(p *Persisted) string {
	var b strings.Builder
	if p.Ring != nil {
		b.WriteString(p.Ring.String())
	}
	ids := make([]string, 0, len(p.Owned))
	for id := range p.Owned {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "|%s=%v", id, p.Owned[id].Cidrs)
	}
	fmt.Fprintf(&b, "|tentative=%v", p.Tentative)
	return b.String()
}
