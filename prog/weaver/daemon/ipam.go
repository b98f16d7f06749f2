package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	wmesh "github.com/weaveworks/mesh"

	"github.com/seedf75a49c6/weave/internal/netdev"
	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/seedf75a49c6/weave/prog/weaver/httpapi"
)

const (
	// IPAMDBFile is the IPAM database in the data dir (Weave's name).
	IPAMDBFile = "weavedata.db"
	// ExposeIdent is the IPAM owner of the bridge's own addresses.
	ExposeIdent = "weave:expose"
	// containerIf is the interface `weave attach` creates (Weave's ethwe).
	containerIf = "ethwe"
	// deadContainerCheck is how often attached namespaces that vanished
	// have their addresses released.
	deadContainerCheck = 15 * time.Second
	// preClaimTimeout bounds the start-up claims of addresses in use, all
	// together, so `weave launch` (30 s) is not held up by an unreachable owner.
	preClaimTimeout = 10 * time.Second
)

// startIPAM builds the allocator when --ipalloc-range is set: bbolt store
// in the data dir, gossip channel "IPallocation", peer GC notifications,
// claims of the addresses already in use and release of dead containers'.
// It must run before the mesh router starts so no gossip is missed.
func (d *daemon) startIPAM(b *backend) error {
	c := d.cfg
	if !c.IPAMEnabled() {
		return nil
	}
	cfg, err := d.ipamConfig(b)
	if err != nil {
		return err
	}
	if err := d.checkRangeOverlap(); err != nil {
		return err
	}
	if err := os.MkdirAll(c.DataDir, 0o755); err != nil {
		return fmt.Errorf("create data dir %s: %w", c.DataDir, err)
	}
	path := d.ipamDB.path
	store, err := ipam.OpenBoltStore(path)
	if err != nil {
		return fmt.Errorf("start IPAM: %w", err)
	}
	d.onStop(func() {
		if err := store.Close(); err != nil {
			d.log.Warn("close IPAM database", "path", path, "err", err)
		}
	})
	cfg.Store = store
	d.guardLostRing(&cfg, d.prior)
	alloc, err := ipam.New(cfg)
	if err != nil {
		return fmt.Errorf("start IPAM from %s: %w", path, err)
	}
	g, err := b.mesh.NewGossip("IPallocation", alloc.Gossiper())
	if err != nil {
		return fmt.Errorf("register IPAM gossip channel: %w", err)
	}
	out := ipam.NewOutbox(g, d.log.With("component", "ipam"))
	d.onStop(out.Close) // after alloc.Stop (cleanups run last first): its hand-over goes out
	alloc.SetGossip(out)
	b.mesh.Peers.OnGC(func(p *wmesh.Peer) { alloc.PeerGone(p.Name) })
	alloc.Start()
	d.onStop(alloc.Stop)
	b.ipam = alloc
	return nil
}

// runIPAMHousekeeping claims addresses in use and starts the dead-container
// watcher; it runs once the mesh is up, so claims can reach other peers.
func (d *daemon) runIPAMHousekeeping(ctx context.Context, b *backend) {
	if b.ipam == nil {
		return
	}
	d.preClaim(ctx, b.ipam)
	d.runNoMasqLocal(ctx, b)
	d.every(ctx, deadContainerCheck, func(time.Time) { d.pruneDead(b.ipam) })
}

func (d *daemon) ipamConfig(b *backend) (ipam.Config, error) {
	c := d.cfg
	universe, err := address.ParseCIDR(c.IPAllocRange)
	if err != nil {
		return ipam.Config{}, fmt.Errorf("parse --ipalloc-range %s: %w", c.IPAllocRange, err)
	}
	var subnet address.CIDR
	if c.IPAllocDefaultSubnet != "" {
		if subnet, err = address.ParseCIDR(c.IPAllocDefaultSubnet); err != nil {
			return ipam.Config{}, fmt.Errorf("parse --ipalloc-default-subnet %s: %w", c.IPAllocDefaultSubnet, err)
		}
	}
	init, err := ipam.ParseInit(c.IPAllocInit)
	if err != nil {
		return ipam.Config{}, err
	}
	initial := len(c.Peers) + 1
	if c.Resume {
		targets, err := LoadTargets(c.DataDir)
		if err != nil {
			return ipam.Config{}, err
		}
		initial = len(targets) + 1
	}
	peers := b.mesh.Peers
	return ipam.Config{
		OurName: b.mesh.Ourself.Name, OurUID: b.mesh.Ourself.UID, OurNickname: c.NickName,
		Universe: universe, DefaultSubnet: subnet, Init: init,
		InitialPeerCount: func() int { return initial },
		IsKnownPeer:      func(p wmesh.PeerName) bool { return peers.Fetch(p) != nil },
		PeerGone:         b.peerGone,
		PeerDropping:     b.peerDropping,
		ConsensusTimeout: c.IPAllocConsensusTimeout,
		Logger:           d.log,
	}, nil
}

// attachRecord is one entry of the weave CLI's attachment registry
// ($WEAVE_RUN_DIR/attached/*.json, written by `weave attach`).
type attachRecord struct {
	ID     string `json:"id"`
	NetNS  string `json:"netns"`
	IfName string `json:"ifname"`
	path   string // the record's file
}

func (d *daemon) attachRecords() []attachRecord {
	files, _ := filepath.Glob(filepath.Join(d.cfg.RunDir, "attached", "*.json"))
	var out []attachRecord
	for _, f := range files {
		var r attachRecord
		data, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err != nil || r.ID == "" {
			d.log.Warn("skipping unreadable attachment record", "path", f, "err", err)
			continue
		}
		r.path = f
		out = append(out, r)
	}
	return out
}

// preClaim tells IPAM about addresses already in use: the bridge's
// (weave expose) and those of attached containers that still exist.
// Addresses of containers that are gone are released.
func (d *daemon) preClaim(ctx context.Context, alloc *ipam.Allocator) {
	ctx, cancel := context.WithTimeout(ctx, preClaimTimeout)
	defer cancel()
	claim := func(ident string, p net.IPNet) {
		c, err := address.ParseCIDR(p.String())
		if err != nil || p.IP.To4() == nil {
			return
		}
		if err := alloc.Claim(ctx, ident, c, true); err != nil {
			d.log.Warn("cannot claim address in use", "ident", ident, "cidr", c.String(), "err", err)
		}
	}
	if ifc, err := net.InterfaceByName(d.cfg.Bridge); err == nil {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				claim(ExposeIdent, *n)
			}
		}
	}
	for _, r := range d.attachRecords() {
		if _, err := os.Stat(r.NetNS); err != nil {
			continue
		}
		_, addrs, ok, err := netdev.ContainerAddrs(r.NetNS, orDefault(r.IfName, containerIf))
		if err != nil || !ok {
			continue
		}
		for _, p := range addrs {
			claim(r.ID, net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)})
		}
	}
	d.pruneDead(alloc)
}

// pruneDead releases the addresses of attached containers whose network
// namespace no longer exists. Idents that `weave attach` did not record
// (CNI, plugins) are left alone.
func (d *daemon) pruneDead(alloc *ipam.Allocator) {
	dead := map[string]bool{}
	var records []attachRecord
	for _, r := range d.attachRecords() {
		if _, err := os.Stat(r.NetNS); errors.Is(err, os.ErrNotExist) {
			dead[r.ID] = true
			records = append(records, r)
		}
	}
	if len(dead) == 0 {
		return
	}
	n, err := alloc.Prune(func(ident string) bool { return !dead[ident] })
	if errors.Is(err, ipam.ErrStopped) {
		return // shutting down
	}
	if err != nil {
		d.log.Warn("release addresses of dead containers", "err", err)
		return
	}
	if n > 0 {
		d.log.Info("released addresses of containers that are gone", "count", n)
	}
	d.removeRecords(records)
}

// removeRecords deletes the attachment records of vanished namespaces,
// unless a record was rewritten since (the ID attached again).
func (d *daemon) removeRecords(records []attachRecord) {
	for _, r := range records {
		var now attachRecord
		data, err := os.ReadFile(r.path)
		if err != nil || json.Unmarshal(data, &now) != nil || now.NetNS != r.NetNS {
			continue
		}
		if _, err := os.Stat(r.NetNS); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			d.log.Warn("remove attachment record of a vanished namespace", "path", r.path, "err", err)
		}
	}
}

// addIPAM puts the allocator's state into a report: Weave's IPAM JSON,
// the status-text summary and the gauges.
func addIPAM(rep *httpapi.Report, alloc *ipam.Allocator) {
	st := alloc.Status()
	rep.IPAM = st
	rep.IPAMSummary = &httpapi.IPAMSummary{Status: st.State, Range: st.Range, DefaultSubnet: st.DefaultSubnet}
	m := &httpapi.IPAMMetrics{
		LocalUsed: st.ActiveIPs, MaxIPs: st.RangeNumIPs,
		PendingAllocates: len(st.PendingAllocates), PendingClaims: len(st.PendingClaims),
		Conflicts: len(st.Conflicts), ConflictsSeen: st.ConflictsSeen,
	}
	unreachable := map[string]bool{}
	var lost uint64
	for _, e := range st.Entries {
		if !e.IsKnownPeer {
			unreachable[e.Peer] = true
			lost += uint64(e.Size)
		}
	}
	m.UnreachableCount = len(unreachable)
	if st.RangeNumIPs > 0 {
		m.UnreachablePercent = 100 * float64(lost) / float64(st.RangeNumIPs)
	}
	rep.IPAMMetrics = m
}
