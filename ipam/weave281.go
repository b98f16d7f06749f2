package ipam

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/seedf75a49c6/weave/ipam/address"
	bolt "go.etcd.io/bbolt"
)

// ErrNotWeaveData marks a file that is not a Weave Net data file of a
// version this router reads.
var ErrNotWeaveData = errors.New("not a Weave Net 2.8.1 data file")

// ReadWeaveDataFile reads a Weave Net 2.8.1 data file (`<db-prefix>data.db`)
// read-only and checks all of it before returning anything: the bbolt
// pages, bucket "top", key "version" (major 1, as 2.8.1 writes it), a
// peer name, and every value's gob (ring invariants included). A corrupt,
// truncated, empty or unknown-version file is an error naming it and
// wrapping ErrCorrupt; nothing is half-read. The file is not changed.
func ReadWeaveDataFile(path string) (p *Persisted, err error) {
	fail := func(e error) error {
		return fmt.Errorf("Weave Net data file %s: %w: %w (move it aside to start without it)", path, ErrCorrupt, e)
	}
	// bbolt panics on some corruptions and, reading the mapped file
	// through damaged offsets, faults on others: make the faults panics
	// (this goroutine runs the whole read) and turn both into errors.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fail(fmt.Errorf("%v", r))
		}
	}()
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("Weave Net data file %s: %w", path, err)
	}
	if st.Size() == 0 {
		return nil, fail(fmt.Errorf("%w: the file is empty", ErrNotWeaveData))
	}
	if err := checkBoltFile(path); err != nil {
		return nil, fail(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("Weave Net data file %s is locked: is Weave Net 2.8.1 still running? %w", path, err)
	}
	if err != nil {
		return nil, fail(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTop)
		if b == nil {
			return fmt.Errorf("%w: no bucket %q", ErrNotWeaveData, bucketTop)
		}
		v := b.Get(keyVersion)
		if len(v) != 2 || v[0] != currentVersion[0] {
			shown := fmt.Sprint(v[:min(len(v), 4)])
			if len(v) > 4 {
				shown = fmt.Sprintf("of %d bytes", len(v))
			}
			return fmt.Errorf("%w: unknown version %s (this router reads version 1.x)", ErrNotWeaveData, shown)
		}
		if p, err = loadBucket(b); err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("%w: no peer name", ErrNotWeaveData)
		}
		return nil
	})
	if err != nil {
		return nil, fail(err)
	}
	return p, nil
}

// Summary is what a data file holds, for the adoption log line.
type Summary struct {
	Entries    int             // ring tokens (every peer's)
	Owned      []address.Range // the ranges the file's peer owns
	Containers int             // idents with addresses
	Addresses  []address.CIDR  // their addresses
}

// Summarize says what p holds.
func (p *Persisted) Summarize() Summary {
	var s Summary
	if p.Ring != nil {
		s.Entries = len(p.Ring.Entries)
		s.Owned = p.Ring.RangesOf(p.PeerName)
	}
	for _, od := range p.Owned {
		if len(od.Cidrs) > 0 {
			s.Containers++
		}
		s.Addresses = append(s.Addresses, od.Cidrs...)
	}
	slices.SortFunc(s.Addresses, func(x, y address.CIDR) int { return int(int64(x.Addr) - int64(y.Addr)) })
	return s
}
