package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// netRecord is what the plugin remembers about one Docker network.
type netRecord struct {
	ID        string   `json:"id"`
	Driver    string   `json:"driver"`          // socket it was created on: weave or weavemesh
	Pools     []string `json:"pools,omitempty"` // IPv4 pools (CIDRs) Docker assigned
	Multicast bool     `json:"multicast,omitempty"`
}

// store keeps the networks in memory and in a JSON file, rewritten
// atomically on every change, so a restarted router still knows networks
// dockerd created earlier (it never sends CreateNetwork again).
type store struct {
	path string
	mu   sync.Mutex
	nets map[string]netRecord
}

type storeFile struct {
	Networks []netRecord `json:"networks"`
}

func openStore(path string) (*store, error) {
	s := &store{path: path, nets: map[string]netRecord{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Docker network state %s: %w", path, err)
	}
	var f storeFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse Docker network state %s: %w", path, err)
	}
	for _, n := range f.Networks {
		s.nets[n.ID] = n
	}
	return s, nil
}

func (s *store) get(id string) (netRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nets[id]
	return n, ok
}

func (s *store) put(n netRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nets[n.ID] = n
	return s.saveLocked()
}

func (s *store) remove(id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.nets[id]; !ok {
		return false, nil
	}
	delete(s.nets, id)
	return true, s.saveLocked()
}

func (s *store) saveLocked() error {
	var f storeFile
	for _, n := range s.nets {
		f.Networks = append(f.Networks, n)
	}
	slices.SortFunc(f.Networks, func(a, b netRecord) int { return strings.Compare(a.ID, b.ID) })
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode Docker network state: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("create directory for %s: %w", s.path, err)
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write Docker network state %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("replace Docker network state %s: %w", s.path, err)
	}
	return nil
}
