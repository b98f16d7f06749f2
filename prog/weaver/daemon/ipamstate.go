package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/seedf75a49c6/weave/internal/netdev"

	ourmesh "github.com/seedf75a49c6/weave/mesh"

	"github.com/seedf75a49c6/weave/ipam"
)

// priorState is what the data and run dirs held before this launch,
// captured before anything is created there.
type priorState struct {
	peerName bool // the peername file existed
	db       bool // the IPAM database existed with content
}

func capturePriorState(cfg Config) priorState {
	return priorState{
		// A name file only `weaver --print-peer-name` wrote (weave-kube
		// runs it before the first launch) is no sign of an earlier launch.
		peerName: fileExists(filepath.Join(cfg.DataDir, ourmesh.PeerNameFile)) &&
			!fileExists(filepath.Join(cfg.DataDir, printedMarker)),
		db: nonEmptyFile(filepath.Join(cfg.DataDir, IPAMDBFile)),
	}
}

// printedMarker, in the data dir, says the peer name file was created by
// --print-peer-name and no launch has used it yet; a launch removes it.
const printedMarker = "peername.printed"

// NotePrintedPeerName records that --print-peer-name created the peer
// name file of dataDir.
func NotePrintedPeerName(dataDir string) error {
	return os.WriteFile(filepath.Join(dataDir, printedMarker), nil, 0o644)
}

// consumePrintedMarker removes the marker once a launch has read it.
func consumePrintedMarker(dataDir string) error {
	if err := os.Remove(filepath.Join(dataDir, printedMarker)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", printedMarker, err)
	}
	return nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func nonEmptyFile(p string) bool { st, err := os.Stat(p); return err == nil && st.Size() > 0 }

// checkPeerNameKept refuses to invent a new identity when the peername
// file is gone but the IPAM database still holds a peer's state: the new
// name would silently discard that state (and its addresses).
func checkPeerNameKept(cfg Config, prior priorState) error {
	if cfg.Name != "" || prior.peerName || !prior.db {
		return nil
	}
	path := filepath.Join(cfg.DataDir, IPAMDBFile)
	store, err := ipam.OpenBoltStore(path)
	if err != nil {
		return err
	}
	p, err := store.Load()
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	if err != nil || p == nil {
		return err
	}
	file := filepath.Join(cfg.DataDir, ourmesh.PeerNameFile)
	return fmt.Errorf("peer name file %s is missing, but IPAM database %s holds the state of peer %s: "+
		"restore the file (echo %s > %s) or pass --name %s; move the database aside to start as a new peer",
		file, path, p.PeerName, p.PeerName, file, p.PeerName)
}

// lostRingReason says why this peer should have IPAM ring state that its
// database lacks ("" when nothing suggests it): the database is missing
// or empty although the peer ran before or containers are still attached.
func (d *daemon) lostRingReason(prior priorState) string {
	if prior.db {
		return ""
	}
	var why []string
	if prior.peerName {
		why = append(why, "the peer name file "+filepath.Join(d.cfg.DataDir, ourmesh.PeerNameFile)+" is from an earlier launch")
	}
	var live []string
	for _, r := range d.attachRecords() {
		if _, err := os.Stat(r.NetNS); !errors.Is(err, fs.ErrNotExist) {
			live = append(live, r.ID)
		}
	}
	if len(live) > 0 {
		why = append(why, fmt.Sprintf("%d attached containers are still running (%s)", len(live), strings.Join(live, ", ")))
	}
	return strings.Join(why, " and ")
}

// guardLostRing turns a default ring initialisation into observer mode
// when the ring state was lost: seeding a ring alone would hand out the
// addresses other peers own. It logs, once and loudly, what to do.
func (d *daemon) guardLostRing(cfg *ipam.Config, prior priorState) {
	why := d.lostRingReason(prior)
	if why == "" {
		return
	}
	path := filepath.Join(d.cfg.DataDir, IPAMDBFile)
	if d.cfg.IPAllocInit != "" {
		d.log.Error("IPAM database is missing or empty although "+why+"; using --ipalloc-init as given",
			"path", path, "ipalloc-init", d.cfg.IPAllocInit)
		return
	}
	cfg.Init = ipam.Init{Mode: ipam.InitObserver}
	d.log.Error("IPAM database is missing or empty although "+why+": not starting a new IPAM ring alone, "+
		"which could hand out addresses other peers own; waiting to join the ring of the peers this router connects to. "+
		"If no peer has the ring any more (every database was lost), relaunch with --ipalloc-init=consensus=N "+
		"(N = number of peers) to start a new one",
		"path", path)
}

// checkRangeOverlap refuses an --ipalloc-range that overlaps a route or
// address of the host (other than on the weave bridge): containers would
// get the host's underlay addresses and the mesh breaks (2.8.1 refuses
// it too: "Network ... overlaps with existing route ... on host").
func (d *daemon) checkRangeOverlap() error {
	p, err := netip.ParsePrefix(d.cfg.IPAllocRange)
	if err != nil {
		return fmt.Errorf("parse --ipalloc-range %s: %w", d.cfg.IPAllocRange, err)
	}
	what, err := netdev.HostOverlap(p.Masked(), d.cfg.Bridge)
	if err != nil {
		return fmt.Errorf("check --ipalloc-range %s against the host's routes: %w", p, err)
	}
	if what != "" {
		return fmt.Errorf("--ipalloc-range: network %s overlaps with existing %s on host; choose a range the host does not use", p, what)
	}
	return nil
}
