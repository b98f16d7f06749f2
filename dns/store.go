package dns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weaveworks/mesh"
)

// errSave marks a failure to persist our entries (the change itself holds).
var errSave = errors.New("save DNS entries")

// storedEntry is one of our entries on disk (JSON).
type storedEntry struct {
	Hostname    string `json:"hostname"`
	ContainerID string `json:"containerid"`
	Addr        string `json:"addr"`
	Version     int    `json:"version"`
	Tombstone   int64  `json:"tombstone,omitempty"`
}

type storeFile struct {
	Peer    string        `json:"peer"`
	Entries []storedEntry `json:"entries"`
}

// loadEntries reads our persisted entries; a missing file is empty, and a
// file written under another peer name is ignored (the name changed).
func loadEntries(path string, us mesh.PeerName) (Entries, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read DNS entries: %w", err)
	}
	var f storeFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse DNS entries %s: %w", path, err)
	}
	if f.Peer != us.String() {
		return nil, nil
	}
	var out Entries
	for _, s := range f.Entries {
		e, err := s.entry(us)
		if err != nil {
			return nil, fmt.Errorf("DNS entries %s: %w", path, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func (s storedEntry) entry(us mesh.PeerName) (Entry, error) {
	a, err := parseIPv4(s.Addr)
	if err != nil {
		return Entry{}, err
	}
	if s.Hostname == "" {
		return Entry{}, errors.New("entry without hostname")
	}
	return Entry{Hostname: s.Hostname, ContainerID: s.ContainerID, Origin: us, Addr: addrUint(a),
		Version: s.Version, Tombstone: s.Tombstone}, nil
}

// saveEntries writes our entries atomically (temp file + rename).
func saveEntries(path string, us mesh.PeerName, own Entries) error {
	if path == "" {
		return nil
	}
	f := storeFile{Peer: us.String(), Entries: []storedEntry{}}
	for _, e := range own {
		f.Entries = append(f.Entries, storedEntry{Hostname: e.Hostname, ContainerID: e.ContainerID,
			Addr: e.IP().String(), Version: e.Version, Tombstone: e.Tombstone})
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode DNS entries: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("%w: %w", errSave, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("%w: %w", errSave, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%w: %w", errSave, err)
	}
	return nil
}
