package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"

	wmesh "github.com/weaveworks/mesh"

	"github.com/seedf75a49c6/weave/internal/netdev"
	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/ipam/address"
	ourmesh "github.com/seedf75a49c6/weave/mesh"
)

// Weave Net 2.8.1 keeps its data file at <db-prefix>data.db; its
// DaemonSet's prefix is /weavedb/weave-net (host /var/lib/weave), so by
// default we look for <data-dir>/weave-netdata.db.
const (
	weave281DBSuffix     = "data.db"
	weave281DefaultDBTag = "weave-net"
)

// Weave281DBPath is where Weave Net 2.8.1's data file is looked for.
func (c *Config) Weave281DBPath() string {
	prefix := c.DBPrefix
	if prefix == "" {
		prefix = filepath.Join(c.DataDir, weave281DefaultDBTag)
	}
	return prefix + weave281DBSuffix
}

// ipamStore is the IPAM database this launch uses and where it came from.
type ipamStore struct {
	path string
	// adopted: our own database is absent (or empty) and Weave Net 2.8.1's
	// file of the same peer is used in place, in 2.8.1's format, so a
	// rollback to 2.8.1 finds every address this router handed out.
	adopted *ipam.Persisted
}

// weave281Candidate returns 2.8.1's data file when our database is absent
// or empty and 2.8.1's exists (and is another file); "" otherwise.
func (c *Config) weave281Candidate() string {
	ours := filepath.Join(c.DataDir, IPAMDBFile)
	legacy := c.Weave281DBPath()
	if nonEmptyFile(ours) || !fileExists(legacy) || sameFile(ours, legacy) {
		return ""
	}
	return legacy
}

func sameFile(a, b string) bool {
	x, err1 := filepath.Abs(a)
	y, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && x == y
}

// ResolvePeerName returns the peer name weaver runs as, persisting it in
// the data dir: --name; else the data dir's peername file; else, in
// Weave Net 2.8.1's order, the peer of 2.8.1's data file (when ours is
// absent: the file is then adopted), the MAC of an existing bridge (2.8.1
// gives it the peer name), the name 2.8.1 derives from the host's machine
// id and system UUID (under --host-root), and last a random one. A
// corrupt 2.8.1 file is an error naming it: it is never skipped, since
// starting as another peer would abandon its addresses.
func ResolvePeerName(cfg Config) (wmesh.PeerName, error) {
	derive := func() (wmesh.PeerName, error) {
		if legacy := cfg.weave281Candidate(); legacy != "" {
			p, err := ipam.ReadWeaveDataFile(legacy)
			if err != nil {
				return wmesh.UnknownPeerName, err
			}
			return p.PeerName, nil
		}
		if ifc, err := net.InterfaceByName(cfg.Bridge); err == nil && len(ifc.HardwareAddr) == 6 {
			if n, err := wmesh.PeerNameFromString(ifc.HardwareAddr.String()); err == nil && n != wmesh.UnknownPeerName {
				return n, nil
			}
		}
		n, _, err := ourmesh.SystemPeerName(cfg.HostRoot)
		if errors.Is(err, ourmesh.ErrNoSystemID) {
			return ourmesh.RandomPeerName()
		}
		return n, err
	}
	return ourmesh.LoadOrDerivePeerName(cfg.DataDir, cfg.Name, derive)
}

// chooseIPAMStore picks the IPAM database for peer name: ours, or 2.8.1's
// data file when ours is absent and 2.8.1's belongs to this peer. A
// corrupt 2.8.1 file is refused (naming it), never half-read.
func chooseIPAMStore(cfg Config, name wmesh.PeerName, log *slog.Logger) (ipamStore, error) {
	ours := ipamStore{path: filepath.Join(cfg.DataDir, IPAMDBFile)}
	legacy := cfg.weave281Candidate()
	if legacy == "" {
		return ours, nil
	}
	p, err := ipam.ReadWeaveDataFile(legacy)
	if err != nil {
		return ipamStore{}, err
	}
	if p.PeerName != name {
		log.Warn("not adopting Weave Net 2.8.1's data file: it belongs to another peer name (pass --name to run as that peer)",
			"path", legacy, "file-peer", p.PeerName.String(), "peer", name.String())
		return ours, nil
	}
	if !cfg.IPAMEnabled() {
		log.Info("Weave Net 2.8.1's data file: running as its peer; IPAM is off (--ipalloc-range \"\"), so the file is left as it is",
			"path", legacy, "peer", name.String())
		return ours, nil
	}
	if p.Ring != nil {
		if u, err := address.ParseCIDR(cfg.IPAllocRange); err == nil && u.Range() != p.Ring.Range() {
			return ipamStore{}, fmt.Errorf("Weave Net 2.8.1's data file %s holds a ring over %s but --ipalloc-range is %s: "+
				"adopting it would discard its ring and addresses; launch with the range 2.8.1 had, or move the file aside",
				legacy, p.Ring.Range(), cfg.IPAllocRange)
		}
	}
	s := p.Summarize()
	ranges := make([]string, len(s.Owned))
	for i, r := range s.Owned {
		ranges[i] = r.String()
	}
	addrs := make([]string, len(s.Addresses))
	for i, a := range s.Addresses {
		addrs[i] = a.String()
	}
	log.Info("adopting Weave Net 2.8.1's data file in place (kept current in 2.8.1's format, so a rollback to 2.8.1 finds every address)",
		"path", legacy, "peer", name.String(), "ring-entries", s.Entries, "owned-ranges", fmt.Sprint(ranges),
		"containers", s.Containers, "addresses", fmt.Sprint(addrs))
	return ipamStore{path: legacy, adopted: p}, nil
}

// adoptWeave281Host removes Weave Net 2.8.1's leftovers our router does not
// use (its NetworkPolicy hooks and chains, its mangle canary, its VXLAN
// vport), after our own rules are in so that established traffic is never
// dropped. A host that never ran 2.8.1 has none of them: nothing is logged.
func (d *daemon) adoptWeave281Host() {
	removed, err := d.firewall.AdoptWeave281Host()
	if len(removed) > 0 {
		d.log.Info("took over the host from Weave Net 2.8.1: our rules are in, removed what it left that we do not use",
			"removed", strings.Join(removed, "; "))
	}
	if err != nil {
		d.log.Warn("remove Weave Net 2.8.1's leftover rules", "err", err)
	}
	if netdev.Weave281DatapathPresent() {
		d.log.Warn("Weave Net 2.8.1's fast-path datapath is still there (an openvswitch device rtnetlink cannot delete); "+
			"it carries no traffic of ours: remove it with 2.8.1's `weave reset` tooling or reboot",
			"device", netdev.Weave281Datapath)
	}
}
