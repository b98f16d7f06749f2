package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wmesh "github.com/weaveworks/mesh"

	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/ipam/address"
	ourmesh "github.com/seedf75a49c6/weave/mesh"
)

func writeIPAMState(t *testing.T, dataDir string, name wmesh.PeerName) {
	t.Helper()
	s, err := ipam.OpenBoltStore(filepath.Join(dataDir, IPAMDBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Save(&ipam.Persisted{PeerName: name}); err != nil {
		t.Fatal(err)
	}
}

// TestMissingPeerNameWithIPAMStateIsAnError: deleting the peername file
// used to give the router a new random name that discarded its IPAM state.
func TestMissingPeerNameWithIPAMStateIsAnError(t *testing.T) {
	cfg := Config{DataDir: t.TempDir()}
	name, _ := wmesh.PeerNameFromString("aa:00:00:00:00:07")
	writeIPAMState(t, cfg.DataDir, name)
	err := checkPeerNameKept(cfg, capturePriorState(cfg))
	file := filepath.Join(cfg.DataDir, ourmesh.PeerNameFile)
	if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "--name aa:00:00:00:00:07") {
		t.Fatalf("got %v, want an error naming %s and the peer", err, file)
	}
	cfg.Name = "aa:00:00:00:00:07" // --name given: fine
	if err := checkPeerNameKept(cfg, capturePriorState(cfg)); err != nil {
		t.Fatal(err)
	}
	first := Config{DataDir: t.TempDir()} // first launch: fine
	if err := checkPeerNameKept(first, capturePriorState(first)); err != nil {
		t.Fatal(err)
	}
}

func lostRingDaemon(t *testing.T, init string) (*daemon, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	cfg := Config{DataDir: t.TempDir(), RunDir: t.TempDir(), IPAllocInit: init}
	return &daemon{cfg: cfg, log: slog.New(slog.NewTextHandler(&logs, nil))}, &logs
}

// TestLostRingStateNeverSeedsAlone: an emptied or deleted database on a
// peer that ran before (or with live containers) used to seed a fresh ring
// owning the whole range, and two hosts handed out the same addresses.
func TestLostRingStateNeverSeedsAlone(t *testing.T) {
	d, logs := lostRingDaemon(t, "")
	if err := os.WriteFile(filepath.Join(d.cfg.DataDir, ourmesh.PeerNameFile), []byte("aa:00:00:00:00:08\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.cfg.DataDir, IPAMDBFile), nil, 0o600); err != nil { // truncated to 0
		t.Fatal(err)
	}
	var cfg ipam.Config
	d.guardLostRing(&cfg, capturePriorState(d.cfg))
	if cfg.Init.Mode != ipam.InitObserver || !strings.Contains(logs.String(), "level=ERROR") ||
		!strings.Contains(logs.String(), "--ipalloc-init=consensus=N") || !strings.Contains(logs.String(), IPAMDBFile) {
		t.Fatalf("init %+v, log:\n%s", cfg.Init, logs.String())
	}
	// Such an allocator, alone, hands out nothing.
	name, _ := wmesh.PeerNameFromString("aa:00:00:00:00:08")
	cfg.OurName, cfg.OurUID, cfg.Universe = name, 1, address.MustParseCIDR("10.9.0.0/24")
	alloc, err := ipam.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	alloc.Start()
	defer alloc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if c, err := alloc.Allocate(ctx, "c1", cfg.Universe); err == nil {
		t.Fatalf("observer allocated %v alone", c)
	}
}

func TestLostRingStateCases(t *testing.T) {
	// Live attached container, no peer name file: lost.
	d, _ := lostRingDaemon(t, "")
	ns := filepath.Join(d.cfg.RunDir, "ns")
	if err := os.WriteFile(ns, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	writeRecord(t, d.cfg.RunDir, attachRecord{ID: "c1", NetNS: ns})
	if why := d.lostRingReason(capturePriorState(d.cfg)); !strings.Contains(why, "c1") {
		t.Errorf("live container: reason %q", why)
	}
	// First launch: nothing lost.
	d, _ = lostRingDaemon(t, "")
	var cfg ipam.Config
	d.guardLostRing(&cfg, capturePriorState(d.cfg))
	if cfg.Init.Mode != ipam.InitConsensus {
		t.Errorf("first launch: init %+v", cfg.Init)
	}
	// Explicit --ipalloc-init wins, with the message.
	d, logs := lostRingDaemon(t, "consensus=1")
	if err := os.WriteFile(filepath.Join(d.cfg.DataDir, ourmesh.PeerNameFile), []byte("aa:00:00:00:00:08\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = ipam.Config{Init: ipam.Init{Mode: ipam.InitConsensus, Quorum: 1}}
	d.guardLostRing(&cfg, capturePriorState(d.cfg))
	if cfg.Init.Mode != ipam.InitConsensus || !strings.Contains(logs.String(), "using --ipalloc-init as given") {
		t.Errorf("explicit init: %+v\n%s", cfg.Init, logs.String())
	}
}

func TestEmptyPasswordIsWarnedOnce(t *testing.T) {
	var logs bytes.Buffer
	d := &daemon{cfg: Config{PasswordSetEmpty: true}, log: slog.New(slog.NewTextHandler(&logs, nil))}
	d.warnEmptyPassword()
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "encryption is off") {
		t.Fatalf("log:\n%s", logs.String())
	}
	logs.Reset()
	d.cfg.PasswordSetEmpty = false
	d.warnEmptyPassword()
	if logs.Len() != 0 {
		t.Fatalf("warned without --password '': %s", logs.String())
	}
}

// TestPrintedPeerNameIsNoEarlierLaunch: weave-kube runs `weaver
// --print-peer-name` before the first launch; the name file it leaves
// must not read as "from an earlier launch" (a false ERROR on every fresh
// node). Once a launch has consumed the marker, a missing database after
// that is lost state again.
func TestPrintedPeerNameIsNoEarlierLaunch(t *testing.T) {
	d, logs := lostRingDaemon(t, "")
	if err := os.WriteFile(filepath.Join(d.cfg.DataDir, ourmesh.PeerNameFile), []byte("aa:00:00:00:00:08\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := NotePrintedPeerName(d.cfg.DataDir); err != nil {
		t.Fatal(err)
	}
	var cfg ipam.Config
	d.guardLostRing(&cfg, capturePriorState(d.cfg))
	if cfg.Init.Mode != ipam.InitConsensus || strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("first launch after --print-peer-name: init %+v, log:\n%s", cfg.Init, logs.String())
	}
	if err := consumePrintedMarker(d.cfg.DataDir); err != nil {
		t.Fatal(err)
	}
	if err := consumePrintedMarker(d.cfg.DataDir); err != nil {
		t.Fatalf("consuming an absent marker: %v", err)
	}
	if why := d.lostRingReason(capturePriorState(d.cfg)); !strings.Contains(why, "earlier launch") {
		t.Fatalf("after a launch consumed the marker, a missing database gives reason %q", why)
	}
}
