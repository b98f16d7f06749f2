package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	wmesh "github.com/weaveworks/mesh"

	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/seedf75a49c6/weave/prog/weaver/httpapi"
)

// soloAllocator is a started single-peer allocator (quorum 1) over
// 10.9.0.0/24 that has allocated one address for each ident.
func soloAllocator(t *testing.T, idents ...string) *ipam.Allocator {
	t.Helper()
	name, _ := wmesh.PeerNameFromString("aa:00:00:00:00:01")
	a, err := ipam.New(ipam.Config{OurName: name, OurUID: 1, Universe: address.MustParseCIDR("10.9.0.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(a.Stop)
	for _, id := range idents {
		if _, err := a.Allocate(context.Background(), id, address.MustParseCIDR("10.9.0.0/24")); err != nil {
			t.Fatalf("allocate %s: %v", id, err)
		}
	}
	return a
}

func writeRecord(t *testing.T, runDir string, r attachRecord) {
	t.Helper()
	dir := filepath.Join(runDir, "attached")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(r)
	if err := os.WriteFile(filepath.Join(dir, r.ID+".json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPruneDeadReleasesOnlyVanishedAttachments: a recorded attachment whose
// namespace is gone loses its address; a live one and an unrecorded ident
// (CNI, plugin) keep theirs.
func TestPruneDeadReleasesOnlyVanishedAttachments(t *testing.T) {
	a := soloAllocator(t, "alive", "dead", "cni-owned")
	run := t.TempDir()
	liveNS := filepath.Join(run, "netns-alive")
	if err := os.WriteFile(liveNS, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	writeRecord(t, run, attachRecord{ID: "alive", NetNS: liveNS, IfName: "ethwe"})
	writeRecord(t, run, attachRecord{ID: "dead", NetNS: filepath.Join(run, "netns-gone"), IfName: "ethwe"})
	d := &daemon{cfg: Config{RunDir: run}, log: slog.New(slog.DiscardHandler)}
	d.pruneDead(a)
	owned, err := a.Owned()
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"alive": true, "dead": false, "cni-owned": true} {
		if got := len(owned[id]) > 0; got != want {
			t.Errorf("after prune, %s holds an address = %v, want %v (owned %v)", id, got, want, owned)
		}
	}
	// The vanished namespace's record is removed, the live one kept.
	for id, want := range map[string]bool{"alive": true, "dead": false} {
		_, err := os.Stat(filepath.Join(run, "attached", id+".json"))
		if got := err == nil; got != want {
			t.Errorf("record of %s present = %v, want %v", id, got, want)
		}
	}
}

// TestAddIPAMFillsSummaryAndGauges: the report carries Weave's IPAM JSON,
// the status state line and the gauges.
func TestAddIPAMFillsSummaryAndGauges(t *testing.T) {
	a := soloAllocator(t, "c1", "c2")
	var rep httpapi.Report
	addIPAM(&rep, a)
	st, ok := rep.IPAM.(ipam.Status)
	if !ok || st.Range != "10.9.0.0/24" || len(st.Entries) == 0 {
		t.Fatalf("report IPAM = %#v", rep.IPAM)
	}
	want := httpapi.IPAMSummary{Status: "ready", Range: "10.9.0.0/24", DefaultSubnet: "10.9.0.0/24"}
	if rep.IPAMSummary == nil || *rep.IPAMSummary != want {
		t.Errorf("summary = %+v, want %+v", rep.IPAMSummary, want)
	}
	m := rep.IPAMMetrics
	if m == nil || m.LocalUsed != 2 || m.MaxIPs != 256 || m.UnreachableCount != 0 || m.UnreachablePercent != 0 {
		t.Errorf("metrics = %+v", m)
	}
	if b, err := json.Marshal(&rep); err != nil || !json.Valid(b) {
		t.Errorf("report does not encode: %v", err)
	}
}

// TestGoldenReportWithIPAM: Weave 2.8.1's report.json from the plain-ipam
// capture, with its IPAM object decoded into ipam.Status (what addIPAM
// puts in the report), re-encodes to the same bytes: field names, order,
// nulls and indentation.
func TestGoldenReportWithIPAM(t *testing.T) {
	files, _ := filepath.Glob("testdata/plain-ipam/h*/report.json")
	if len(files) == 0 {
		t.Fatal("no Weave 2.8.1 report.json in testdata/plain-ipam")
	}
	for _, f := range files {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var raw struct{ IPAM json.RawMessage }
		var rep httpapi.Report
		var st ipam.Status
		if err := errors.Join(json.Unmarshal(want, &raw), json.Unmarshal(want, &rep), json.Unmarshal(raw.IPAM, &st)); err != nil {
			t.Fatalf("decode %s: %v", f, err)
		}
		rep.IPAM = st
		got, err := json.MarshalIndent(&rep, "", "    ")
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s re-encodes differently\n--- got\n%s\n--- want\n%s", f, got, want)
		}
	}
}
