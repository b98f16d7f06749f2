package httpapi

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestPeersAndMetricsShowLiveness(t *testing.T) {
	since := time.Date(2026, 12, 1, 8, 31, 2, 0, time.UTC)
	rep := Report{Router: RouterReport{
		Peers: []PeerReport{{Name: "aa:00:00:00:00:01", NickName: "h1"}, {Name: "aa:00:00:00:00:02", NickName: "h2"}},
		Liveness: map[string]PeerLiveness{
			"aa:00:00:00:00:02": {NickName: "h2", State: "alive", Since: since, For: 90 * time.Second},
			"aa:00:00:00:00:05": {NickName: "h5", State: "dead", Since: since, For: 3 * time.Second},
		},
	}, LivenessTransitions: map[string]uint64{"alive": 2, "dead": 1, "suspect": 1}}
	var b bytes.Buffer
	if err := WritePeers(&b, &rep.Router); err != nil {
		t.Fatal(err)
	}
	want := "aa:00:00:00:00:01(h1)\n" +
		"aa:00:00:00:00:02(h2)  alive since 2026-12-01 08:31:02 UTC (1m30s)\n" +
		"aa:00:00:00:00:05(h5)  dead since 2026-12-01 08:31:02 UTC (3s)\n"
	if b.String() != want {
		t.Fatalf("status peers:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteMetrics(&b, &rep); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"# TYPE weave_liveness_transitions_total counter",
		`weave_liveness_transitions_total{state="dead"} 1`,
		`weave_liveness_transitions_total{state="alive"} 2`,
	} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("metrics lack %q:\n%s", line, b.String())
		}
	}
}

func TestNoLivenessLeavesPeersAsWeave(t *testing.T) {
	rep := RouterReport{Peers: []PeerReport{{Name: "aa:00:00:00:00:01", NickName: "h1"}}}
	var b bytes.Buffer
	if err := WritePeers(&b, &rep); err != nil || b.String() != "aa:00:00:00:00:01(h1)\n" {
		t.Fatalf("%q %v", b.String(), err)
	}
}
