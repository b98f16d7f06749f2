package cni

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
)

// record is what the plugin keeps about one attachment, so that DEL knows
// what it allocated and GC can release what the runtime forgot.
type record struct {
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifname"`
	NetNS       string `json:"netns,omitempty"`
	HostVeth    string `json:"hostVeth,omitempty"` // "" for weave-ipam
	IPAMType    string `json:"ipamType,omitempty"` // "" = the weave router
	// Ident is the router IPAM ident the addresses are held under; ""
	// (records written before there was one) is the container ID.
	Ident string         `json:"ident,omitempty"`
	Addrs []netip.Prefix `json:"addrs,omitempty"`
}

// legacyIfName is the interface whose addresses keep the bare container ID
// as their IPAM ident: the CNI default, what kubelet and podman pass for
// a pod's (only) network, and 2.8.1 keyed every allocation by the
// container ID alone. Pods attached before an upgrade keep their address.
const legacyIfName = "eth0"

// ipamIdent keys an allocation by container ID and interface name, so a
// pod attached twice (Multus: two ADDs, one container ID, two ifnames)
// gets two addresses and a DEL releases only its own.
func ipamIdent(containerID, ifName string) string {
	if ifName == legacyIfName || ifName == "" {
		return containerID
	}
	return containerID + ":" + ifName
}

// newRecord starts the record of a new attachment.
func newRecord(containerID, ifName, netNS string) record {
	return record{ContainerID: containerID, IfName: ifName, NetNS: netNS, Ident: ipamIdent(containerID, ifName)}
}

// ident is the IPAM ident of r's addresses.
func (r record) ident() string {
	if r.Ident != "" {
		return r.Ident
	}
	return r.ContainerID
}

// loadOrNew returns the attachment's record, or, when there is none (an
// ADD that never got this far, or an attachment 2.8.1 made), the record a
// new ADD would start with; err reports an unreadable record.
func (s store) loadOrNew(containerID, ifName, netNS string) (record, bool, error) {
	r, ok, err := s.load(containerID, ifName)
	if !ok {
		r = newRecord(containerID, ifName, netNS)
	}
	return r, ok, err
}

// store is the directory of records of one plugin and network:
// <dataDir>/<plugin>/<network>/<hash>.json.
type store struct{ dir string }

func newStore(dataDir, plugin, network string) store {
	return store{dir: filepath.Join(dataDir, plugin, network)}
}

func attachmentKey(containerID, ifName string) string {
	sum := sha256.Sum256([]byte(containerID + "/" + ifName))
	return hex.EncodeToString(sum[:])
}

func (s store) path(containerID, ifName string) string {
	return filepath.Join(s.dir, attachmentKey(containerID, ifName)[:32]+".json")
}

// save writes r atomically (temp file + rename).
func (s store) save(r record) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create state dir %s: %w", s.dir, err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode attachment record: %w", err)
	}
	dst := s.path(r.ContainerID, r.IfName)
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write attachment record %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("write attachment record %s: %w", dst, err)
	}
	return nil
}

// load returns the record of an attachment; ok=false when there is none.
func (s store) load(containerID, ifName string) (r record, ok bool, err error) {
	data, err := os.ReadFile(s.path(containerID, ifName))
	if errors.Is(err, os.ErrNotExist) {
		return record{}, false, nil
	}
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil {
		return record{}, false, fmt.Errorf("read attachment record of %s/%s: %w", containerID, ifName, err)
	}
	return r, true, nil
}

func (s store) remove(containerID, ifName string) error {
	err := os.Remove(s.path(containerID, ifName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove attachment record of %s/%s: %w", containerID, ifName, err)
	}
	return nil
}

// list returns every readable record; unreadable files are reported in
// the error but do not hide the others.
func (s store) list() ([]record, error) {
	files, err := filepath.Glob(filepath.Join(s.dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list attachment records in %s: %w", s.dir, err)
	}
	var out []record
	var errs []error
	for _, f := range files {
		var r record
		data, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read attachment record %s: %w", f, err))
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}
