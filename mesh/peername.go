package mesh

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	wmesh "github.com/weaveworks/mesh"
)

// PeerNameFile is the file, inside the data directory, that holds the
// persisted peer name as text ("aa:bb:cc:dd:ee:ff\n").
const PeerNameFile = "peername"

// LoadOrCreatePeerName returns the peer name persisted in dataDir (file
// "peername"), creating a random locally-administered unicast MAC-style
// name and persisting it when there is none. A non-empty flagName (the
// --name flag) wins and is persisted. dataDir is created if missing.
func LoadOrCreatePeerName(dataDir, flagName string) (wmesh.PeerName, error) {
	return LoadOrDerivePeerName(dataDir, flagName, RandomPeerName)
}

// LoadOrDerivePeerName is LoadOrCreatePeerName with the name for a data
// dir without one coming from derive (weaver: an adopted Weave Net 2.8.1
// data file, the bridge's MAC or the host's IDs, as 2.8.1 derives it,
// else random); the derived name is persisted.
func LoadOrDerivePeerName(dataDir, flagName string, derive func() (wmesh.PeerName, error)) (wmesh.PeerName, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return wmesh.UnknownPeerName, fmt.Errorf("create data dir %s: %w", dataDir, err)
	}
	path := filepath.Join(dataDir, PeerNameFile)
	if flagName != "" {
		name, err := wmesh.PeerNameFromString(flagName)
		if err != nil {
			return wmesh.UnknownPeerName, fmt.Errorf("parse peer name %q (--name): %w", flagName, err)
		}
		if err := persistPeerName(path, name); err != nil {
			return wmesh.UnknownPeerName, err
		}
		return name, nil
	}
	name, err := readPeerName(path)
	if err == nil {
		return name, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return wmesh.UnknownPeerName, err
	}
	name, err = derive()
	if err != nil {
		return wmesh.UnknownPeerName, err
	}
	if err := persistPeerName(path, name); err != nil {
		return wmesh.UnknownPeerName, err
	}
	return name, nil
}

// RandomPeerName returns a random 48-bit peer name that is a
// locally-administered (bit 1 of the first byte set) unicast (bit 0 clear)
// MAC address, so it never collides with a vendor-assigned address.
func RandomPeerName() (wmesh.PeerName, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return wmesh.UnknownPeerName, fmt.Errorf("read random peer name: %w", err)
	}
	b[0] = (b[0] &^ 0x01) | 0x02
	return peerNameFromBytes(b[:]), nil
}

func readPeerName(path string) (wmesh.PeerName, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return wmesh.UnknownPeerName, fmt.Errorf("read peer name file %s: %w", path, err)
	}
	text := strings.TrimSpace(string(data))
	name, err := wmesh.PeerNameFromString(text)
	if err != nil || text == "" {
		return wmesh.UnknownPeerName, fmt.Errorf("parse peer name file %s (corrupt, content %q): %w",
			path, truncate(text, 64), errors.Join(errCorruptPeerName, err))
	}
	return name, nil
}

var errCorruptPeerName = errors.New("not a peer name")

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// persistPeerName writes name to path atomically: temp file in the same
// directory, fsync, rename, fsync of the directory.
func persistPeerName(path string, name wmesh.PeerName) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".peername-*")
	if err != nil {
		return fmt.Errorf("create temp file in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.WriteString(name.String() + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("write peer name file %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync peer name file %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close peer name file %s: %w", tmp.Name(), err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("chmod peer name file %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename peer name file to %s: %w", path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open data dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync data dir %s: %w", dir, err)
	}
	return nil
}
