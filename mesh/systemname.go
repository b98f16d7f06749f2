package mesh

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	wmesh "github.com/weaveworks/mesh"
)

// systemNameSalt prefixes the system IDs before hashing, as Weave Net
// 2.8.1 does: the same host IDs give the same peer name in both.
const systemNameSalt = "9oBJ0Jmip-"

// The files Weave Net 2.8.1 reads the host's identity from, first found
// of each pair: the machine id (systemd, else D-Bus) and the hardware
// UUID (DMI, else the hypervisor's).
var (
	machineIDFiles  = []string{"etc/machine-id", "var/lib/dbus/machine-id"}
	systemUUIDFiles = []string{"sys/class/dmi/id/product_uuid", "sys/hypervisor/uuid"}
)

// ErrNoSystemID means neither a machine id nor a system UUID could be
// read: there is nothing to derive a stable peer name from.
var ErrNoSystemID = errors.New("no machine id and no system UUID")

// SystemPeerName returns the peer name Weave Net 2.8.1 derives for a host
// that has no persisted one (`weaver --print-peer-name` with no bridge and
// no data file): SHA-256 over the salt, the machine id and the system
// UUID (each file's bytes as they are, newline included), its first six
// bytes made a unicast, locally administered MAC. The files are read
// under hostRoot ("" = /). The second result names the files used.
func SystemPeerName(hostRoot string) (wmesh.PeerName, []string, error) {
	if hostRoot == "" {
		hostRoot = "/"
	}
	var ids []byte
	var used []string
	for _, set := range [][]string{machineIDFiles, systemUUIDFiles} {
		b, path, err := readFirst(hostRoot, set)
		if err != nil {
			return wmesh.UnknownPeerName, nil, err
		}
		if path != "" {
			ids = append(ids, b...)
			used = append(used, path)
		}
	}
	if len(ids) == 0 {
		return wmesh.UnknownPeerName, nil, fmt.Errorf("derive peer name under %s: %w", hostRoot, ErrNoSystemID)
	}
	return PeerNameFromSystemIDs(ids), used, nil
}

// PeerNameFromSystemIDs hashes concatenated system IDs into a peer name.
func PeerNameFromSystemIDs(ids []byte) wmesh.PeerName {
	h := sha256.New()
	h.Write([]byte(systemNameSalt))
	h.Write(ids)
	sum := h.Sum(nil)
	sum[0] = (sum[0] &^ 0x01) | 0x02
	return peerNameFromBytes(sum[:6])
}

// readFirst reads the first of names (relative to root) that exists; an
// absent file is skipped, and so is a directory in its place (what a
// Kubernetes hostPath mount of a missing file leaves); any other read
// error is returned.
func readFirst(root string, names []string) ([]byte, string, error) {
	for _, n := range names {
		p := filepath.Join(root, n)
		if st, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) || (err == nil && st.IsDir()) {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, "", fmt.Errorf("read system id %s: %w", p, err)
		}
		return b, p, nil
	}
	return nil, "", nil
}
