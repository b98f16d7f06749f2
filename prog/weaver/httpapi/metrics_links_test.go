package httpapi

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestLinkMetrics: per-link counters (bytes only where VXLAN counts them)
// and the fallback gauge by preferred path.
func TestLinkMetrics(t *testing.T) {
	rep := Report{
		LinkTraffic: map[string]LinkTraffic{
			"aa:00:00:00:00:02": {TxFrames: 10, RxFrames: 7, TxBytes: 1000, RxBytes: 700, HasBytes: true, RTT: 250 * time.Microsecond},
			"aa:00:00:00:00:03": {TxFrames: 3, RxFrames: 4},
		},
		Router: RouterReport{Connections: []ConnectionReport{
			{State: "established", Attrs: map[string]any{"name": "sleeve", "fallback": "fastdp(no VXLAN heartbeat ack for 3s)"}},
			{State: "established", Attrs: map[string]any{"name": "fastdp"}},
		}},
	}
	var b bytes.Buffer
	if err := WriteMetrics(&b, &rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`weave_link_frames_total{direction="tx",peer="aa:00:00:00:00:02"} 10`,
		`weave_link_frames_total{direction="rx",peer="aa:00:00:00:00:03"} 4`,
		`weave_link_bytes_total{direction="rx",peer="aa:00:00:00:00:02"} 700`,
		`weave_connection_fallbacks{preferred="fastdp"} 1`,
		`weave_link_rtt_seconds{peer="aa:00:00:00:00:02"} 0.00025`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("metrics lack %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `weave_link_bytes_total{direction="tx",peer="aa:00:00:00:00:03"}`) {
		t.Error("bytes of a sleeve-only link exported")
	}
}
