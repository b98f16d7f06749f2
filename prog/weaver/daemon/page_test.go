package daemon

import (
	"testing"

	"github.com/seedf75a49c6/weave/fastdp"
	"github.com/seedf75a49c6/weave/sleeve"
)

// TestLinkCounters: sleeve frames and VXLAN device counters add up per
// peer; a device that cannot be read (or a name that is not one) counts 0
// but still marks the link as byte-counted.
func TestLinkCounters(t *testing.T) {
	diag := map[string]any{
		"sleeve": sleeve.Diagnostics{Peers: []sleeve.PeerDiagnostics{
			{Peer: "aa:00:00:00:00:02", Counters: sleeve.Counters{TxFrames: 5, RxFrames: 3}},
			{Peer: "aa:00:00:00:00:03", Counters: sleeve.Counters{TxFrames: 1}},
		}},
		fastdp.DisplayName: fastdp.Status{Links: []fastdp.LinkStatus{{Peer: "aa:00:00:00:00:02", Device: "../../etc"}}},
	}
	got := linkCounters(diag)
	if c := got["aa:00:00:00:00:02"]; c.TxFrames != 5 || c.RxFrames != 3 || !c.HasBytes || c.TxBytes != 0 {
		t.Errorf("h2 counters %+v", c)
	}
	if c := got["aa:00:00:00:00:03"]; c.TxFrames != 1 || c.HasBytes {
		t.Errorf("h3 counters %+v", c)
	}
	if len(linkCounters(nil)) != 0 {
		t.Error("counters from no diagnostics")
	}
	if r := perSecond(30, 10, 2); r != 10 {
		t.Errorf("perSecond = %v, want 10", r)
	}
	if r := perSecond(5, 10, 2); r != 0 {
		t.Errorf("perSecond after a counter reset = %v, want 0", r)
	}
}
