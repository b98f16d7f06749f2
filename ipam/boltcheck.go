package ipam

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// bbolt maps the whole database and faults (SIGBUS) when a page it was
// told exists lies beyond the end of a truncated file. checkBoltFile reads
// the two meta pages itself and refuses a file shorter than the page count
// its newest valid meta page records, before bbolt maps it.
//
// Meta page layout (bbolt's own format): a 16-byte page header, then
// magic, version, page size, flags (uint32 each), root bucket (16 bytes),
// freelist page, high-water page count, txid, checksum (uint64 each); the
// checksum is FNV-1a 64 over the meta from magic to txid.
const (
	boltMagic      = 0xED0CDAED
	boltMetaOffset = 16
	boltMetaLen    = 64
	boltMinPage    = 512
)

type boltMeta struct {
	pageSize uint32
	pages    uint64
	txid     uint64
}

// checkBoltFile returns nil for a missing or empty file (bbolt creates a
// fresh database) and for a consistent one.
func checkBoltFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	m0, err0 := readBoltMeta(f, 0)
	if err0 != nil {
		return fmt.Errorf("first meta page: %w", err0)
	}
	m := m0
	if m1, err1 := readBoltMeta(f, int64(m0.pageSize)); err1 == nil && m1.txid > m0.txid {
		m = m1
	}
	if need := int64(m.pages) * int64(m.pageSize); st.Size() < need {
		return fmt.Errorf("file is %d bytes but its meta page records %d pages of %d bytes (%d bytes): truncated",
			st.Size(), m.pages, m.pageSize, need)
	}
	return nil
}

func readBoltMeta(r io.ReaderAt, off int64) (boltMeta, error) {
	b := make([]byte, boltMetaOffset+boltMetaLen)
	if _, err := r.ReadAt(b, off); err != nil {
		return boltMeta{}, fmt.Errorf("read at %d: %w", off, err)
	}
	meta := b[boltMetaOffset:]
	le := binary.LittleEndian
	if le.Uint32(meta[0:]) != boltMagic {
		return boltMeta{}, fmt.Errorf("no bbolt magic at %d", off)
	}
	h := fnv.New64a()
	_, _ = h.Write(meta[:56])
	if h.Sum64() != le.Uint64(meta[56:]) {
		return boltMeta{}, fmt.Errorf("meta page at %d fails its checksum", off)
	}
	m := boltMeta{pageSize: le.Uint32(meta[8:]), pages: le.Uint64(meta[40:]), txid: le.Uint64(meta[48:])}
	if m.pageSize < boltMinPage || m.pageSize&(m.pageSize-1) != 0 {
		return boltMeta{}, fmt.Errorf("meta page at %d records page size %d", off, m.pageSize)
	}
	return m, nil
}
