package daemon

import (
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/fastdp"
	"github.com/seedf75a49c6/weave/linkstate"
	"github.com/seedf75a49c6/weave/sleeve"
)

// TestLinkCounters: sleeve frames and bytes and VXLAN device counters
// add up per peer; a device that cannot be read (or a name that is not
// one) counts 0 but still marks the link as byte-counted. A fastdp link's
// RTT is its heartbeat's; a sleeve link's the liveness probe's, even when
// a fastdp heartbeat RTT from before the fallback is still reported.
func TestLinkCounters(t *testing.T) {
	diag := map[string]any{
		"sleeve": sleeve.Diagnostics{Peers: []sleeve.PeerDiagnostics{
			{Peer: "aa:00:00:00:00:02", Counters: sleeve.Counters{TxFrames: 5, RxFrames: 3}},
			{Peer: "aa:00:00:00:00:03", Counters: sleeve.Counters{TxFrames: 1, TxBytes: 1500, RxBytes: 700}},
			{Peer: "aa:00:00:00:00:04", Counters: sleeve.Counters{TxFrames: 1}},
			{Peer: "aa:00:00:00:00:06"},
		}},
		fastdp.DisplayName: fastdp.Status{Links: []fastdp.LinkStatus{
			{Peer: "aa:00:00:00:00:02", Device: "../../etc", RTT: 300 * time.Microsecond},
			{Peer: "aa:00:00:00:00:05", Device: "vethwe-nosuch"},
			{Peer: "aa:00:00:00:00:06", Device: "vethwe-nosuch", RTT: 400 * time.Microsecond},
		}},
	}
	overlay := map[string]string{
		"aa:00:00:00:00:02": "fastdp", "aa:00:00:00:00:03": "sleeve", "aa:00:00:00:00:04": "sleeve",
		"aa:00:00:00:00:05": "fastdp", "aa:00:00:00:00:06": "sleeve",
	}
	probe := func(peer string) (time.Duration, bool) {
		switch peer {
		case "aa:00:00:00:00:02", "aa:00:00:00:00:03", "aa:00:00:00:00:05", "aa:00:00:00:00:06":
			return 2 * time.Millisecond, true
		}
		return 0, false
	}
	got := linkCounters(diag, overlay, probe)
	if c := got["aa:00:00:00:00:02"]; c.TxFrames != 5 || c.RxFrames != 3 || !c.HasBytes || c.TxBytes != 0 ||
		c.RTT != 300*time.Microsecond || c.RTTBy != linkstate.RTTHeartbeat {
		t.Errorf("h2 (fastdp) counters %+v", c)
	}
	if c := got["aa:00:00:00:00:03"]; c.TxFrames != 1 || !c.HasBytes || c.TxBytes != 1500 || c.RxBytes != 700 ||
		c.RTT != 2*time.Millisecond || c.RTTBy != linkstate.RTTProbe {
		t.Errorf("h3 (sleeve) counters %+v", c)
	}
	if c := got["aa:00:00:00:00:04"]; c.RTT != 0 || c.RTTBy != "" {
		t.Errorf("h4 (sleeve, never probed) has an RTT: %+v", c)
	}
	if c := got["aa:00:00:00:00:05"]; c.RTT != 0 {
		t.Errorf("h5 (fastdp, no heartbeat yet) took the probe RTT: %+v", c)
	}
	if c := got["aa:00:00:00:00:06"]; c.RTT != 2*time.Millisecond || c.RTTBy != linkstate.RTTProbe {
		t.Errorf("h6 (fell back to sleeve) RTT %v by %q, want the probe's 2ms, not the old heartbeat's", c.RTT, c.RTTBy)
	}
	if c := linkCounters(diag, overlay, nil)["aa:00:00:00:00:03"]; c.RTT != 0 || c.TxBytes != 1500 {
		t.Errorf("h3 without liveness: %+v", c)
	}
	if len(linkCounters(nil, overlay, probe)) != 0 {
		t.Error("counters from no diagnostics")
	}
	if r := perSecond(30, 10, 2); r != 10 {
		t.Errorf("perSecond = %v, want 10", r)
	}
	if r := perSecond(5, 10, 2); r != 0 {
		t.Errorf("perSecond after a counter reset = %v, want 0", r)
	}
}
