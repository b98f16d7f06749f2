package httpapi

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seedf75a49c6/weave/router"
)

// LinkTraffic are one link's counters since its connection started.
type LinkTraffic struct {
	TxFrames, RxFrames uint64        // sleeve frames plus VXLAN packets
	TxBytes, RxBytes   uint64        // sleeve UDP payload bytes plus VXLAN device bytes
	HasBytes           bool          // the link has a sleeve forwarder or VXLAN device whose bytes are counted
	RTT                time.Duration // round trip to the peer; 0 = none
	RTTBy              string        // linkstate.RTTHeartbeat (fastdp) or linkstate.RTTProbe (liveness probe, sleeve links)
}

// collectLinks writes weave_link_frames_total, weave_link_bytes_total and
// weave_connection_fallbacks.
func collectLinks(ch chan<- prometheus.Metric, rep *Report) {
	for _, peer := range slices.Sorted(maps.Keys(rep.LinkTraffic)) {
		t := rep.LinkTraffic[peer]
		ch <- prometheus.MustNewConstMetric(descLinkFrames, prometheus.CounterValue, float64(t.TxFrames), peer, "tx")
		ch <- prometheus.MustNewConstMetric(descLinkFrames, prometheus.CounterValue, float64(t.RxFrames), peer, "rx")
		if t.HasBytes {
			ch <- prometheus.MustNewConstMetric(descLinkBytes, prometheus.CounterValue, float64(t.TxBytes), peer, "tx")
			ch <- prometheus.MustNewConstMetric(descLinkBytes, prometheus.CounterValue, float64(t.RxBytes), peer, "rx")
		}
		if t.RTT > 0 {
			ch <- gauge(descLinkRTT, t.RTT.Seconds(), peer)
		}
	}
	fallbacks := map[string]int{}
	for _, c := range rep.Router.Connections {
		if f, ok := c.Attrs[router.FallbackAttr].(string); ok && f != "" && c.State == "established" {
			preferred, _, _ := strings.Cut(f, "(")
			fallbacks[preferred]++
		}
	}
	for _, p := range slices.Sorted(maps.Keys(fallbacks)) {
		ch <- gauge(descFallbacks, float64(fallbacks[p]), p)
	}
}
