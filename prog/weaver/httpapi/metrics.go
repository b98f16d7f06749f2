package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// The weave_* families of Weave Net 2.8.1's /metrics, with its names, help
// texts and labels.
var (
	descConnections = prometheus.NewDesc("weave_connections", "Number of peer-to-peer connections.",
		[]string{"state", "type", "encryption"}, nil)
	descTerminations = prometheus.NewDesc("weave_connection_terminations_total",
		"Number of peer-to-peer connections terminated.", nil, nil)
	descIPs          = prometheus.NewDesc("weave_ips", "Number of IP addresses.", []string{"state"}, nil)
	descMaxIPs       = prometheus.NewDesc("weave_max_ips", "Size of IP address space used by allocator.", nil, nil)
	descDNSEntries   = prometheus.NewDesc("weave_dns_entries", "Number of DNS entries.", nil, nil)
	descFlows        = prometheus.NewDesc("weave_flows", "Number of FastDP flows.", nil, nil)
	descUnreachCount = prometheus.NewDesc("weave_ipam_unreachable_count", "Number of unreachable peers.", nil, nil)
	descUnreachPct   = prometheus.NewDesc("weave_ipam_unreachable_percentage",
		"Percentage of IP addresses owned  by unreachable peers.", nil, nil)
	descPendingAllocates = prometheus.NewDesc("weave_ipam_pending_allocates", "Number of pending allocates.", nil, nil)
	descPendingClaims    = prometheus.NewDesc("weave_ipam_pending_claims", "Number of pending claims.", nil, nil)
	// Ours, not in 2.8.1: heal conflicts (ipam/heal.go), the liveness detector.
	descConflicts = prometheus.NewDesc("weave_ipam_conflicts",
		"Addresses held here that the peer which took over our space while we were cut off gave out too.", nil, nil)
	descLiveness = prometheus.NewDesc("weave_liveness_transitions_total",
		"Number of times a peer entered a liveness state.", []string{"state"}, nil)
	// Ours (status page, issue 24): per-link traffic and fallbacks.
	descLinkFrames = prometheus.NewDesc("weave_link_frames_total",
		"Frames sent (tx) or received (rx) on the link to a peer: sleeve frames plus VXLAN packets.", []string{"peer", "direction"}, nil)
	descLinkBytes = prometheus.NewDesc("weave_link_bytes_total",
		"Bytes sent (tx) or received (rx) on the link to a peer: sleeve UDP payload bytes plus VXLAN device bytes.", []string{"peer", "direction"}, nil)
	descLinkRTT = prometheus.NewDesc("weave_link_rtt_seconds",
		"Round trip to a peer: the fastdp heartbeat's, or on a sleeve link the liveness probe's.", []string{"peer"}, nil)
	descFallbacks = prometheus.NewDesc("weave_connection_fallbacks",
		"Established connections not on their preferred data path, by that path.", []string{"preferred"}, nil)
)

// NewMetricsHandler serves /metrics through client_golang: the Go runtime
// and process collectors (the go_* and process_* families 2.8.1 serves
// from the default registry) and the weave_* families, computed from a
// fresh report at each scrape. Each handler has its own registry.
func NewMetricsHandler(report func() Report) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		legacyMemStats{},
		reportCollector(report),
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// reportCollector is the weave_* collector.
type reportCollector func() Report

// Describe implements prometheus.Collector.
func (reportCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnections, descTerminations, descIPs, descMaxIPs, descDNSEntries,
		descFlows, descUnreachCount, descUnreachPct, descPendingAllocates, descPendingClaims, descConflicts, descLiveness,
		descLinkFrames, descLinkBytes, descLinkRTT, descFallbacks} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. Like 2.8.1 it writes the IPAM
// gauges only with IPAM on, weave_dns_entries only with DNS on and
// weave_flows only with the fast datapath; unlike 2.8.1 it never
// dereferences a subsystem that is off.
func (c reportCollector) Collect(ch chan<- prometheus.Metric) {
	rep := c()
	collectConnections(ch, rep.Router.Connections)
	ch <- prometheus.MustNewConstMetric(descTerminations, prometheus.CounterValue, float64(rep.Router.TerminationCount))
	if diags, ok := rep.Router.OverlayDiagnostics.(map[string]any); ok && diags["fastdp"] != nil {
		ch <- gauge(descFlows, 0) // no ODP flows: the kernel bridge forwards (docs/fastdp.md)
	}
	if d := rep.DNSSummary; d != nil {
		ch <- gauge(descDNSEntries, float64(d.OwnEntries))
	}
	if m := rep.IPAMMetrics; m != nil {
		ch <- gauge(descIPs, float64(m.LocalUsed), "local-used")
		ch <- gauge(descMaxIPs, float64(m.MaxIPs))
		ch <- gauge(descUnreachCount, float64(m.UnreachableCount))
		ch <- gauge(descUnreachPct, m.UnreachablePercent)
		ch <- gauge(descPendingAllocates, float64(m.PendingAllocates))
		ch <- gauge(descPendingClaims, float64(m.PendingClaims))
		if m.ConflictsSeen > 0 { // absent until a heal conflicted, as 2.8.1 has no such family
			ch <- gauge(descConflicts, float64(m.Conflicts))
		}
	}
	for st, n := range rep.LivenessTransitions {
		ch <- prometheus.MustNewConstMetric(descLiveness, prometheus.CounterValue, float64(n), st)
	}
	collectLinks(ch, &rep)
}

// WriteMetrics writes the weave_* families of rep in the Prometheus text
// format (what /metrics serves after the runtime families).
func WriteMetrics(w io.Writer, rep *Report) error {
	reg := prometheus.NewRegistry()
	r := *rep
	if err := reg.Register(reportCollector(func() Report { return r })); err != nil {
		return fmt.Errorf("register weave metrics: %w", err)
	}
	fams, err := reg.Gather()
	if err != nil {
		return fmt.Errorf("gather weave metrics: %w", err)
	}
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(w, f); err != nil {
			return fmt.Errorf("write metric %s: %w", f.GetName(), err)
		}
	}
	return nil
}

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// connType is a (state, type) pair of weave_connections.
type connType struct{ state, typ string }

// collectConnections writes, as 2.8.1 does, two series for every (state,
// type) that has a connection: encryption="yes" and encryption="", each
// possibly 0. Type is the overlay's display name ("fastdp", "sleeve"), or
// "unknown" for targets without a connection.
func collectConnections(ch chan<- prometheus.Metric, conns []ConnectionReport) {
	counts := map[connType]*[2]int{} // [unencrypted, encrypted]
	var order []connType
	for _, c := range conns {
		k := connType{state: c.State, typ: "unknown"}
		if name, ok := c.Attrs["name"].(string); ok && name != "" {
			k.typ = name
		}
		if counts[k] == nil {
			counts[k] = &[2]int{}
			order = append(order, k)
		}
		if enc, ok := c.Attrs["encrypted"].(bool); ok && enc {
			counts[k][1]++
		} else {
			counts[k][0]++
		}
	}
	for _, k := range order {
		ch <- gauge(descConnections, float64(counts[k][1]), k.state, k.typ, "yes")
		ch <- gauge(descConnections, float64(counts[k][0]), k.state, k.typ, "")
	}
}

// Two go_memstats families that 2.8.1's client_golang served and today's
// Go collector dropped; dashboards built on 2.8.1 may still graph them.
var (
	descLookups = prometheus.NewDesc("go_memstats_lookups_total",
		"Total number of pointer lookups.", nil, nil)
	descGCCPUFraction = prometheus.NewDesc("go_memstats_gc_cpu_fraction",
		"The fraction of this program's available CPU time used by the GC since the program started.", nil, nil)
)

// legacyMemStats collects them from runtime.MemStats.
type legacyMemStats struct{}

// Describe implements prometheus.Collector.
func (legacyMemStats) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLookups
	ch <- descGCCPUFraction
}

// Collect implements prometheus.Collector.
func (legacyMemStats) Collect(ch chan<- prometheus.Metric) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	ch <- prometheus.MustNewConstMetric(descLookups, prometheus.CounterValue, float64(ms.Lookups))
	ch <- gauge(descGCCPUFraction, ms.GCCPUFraction)
}
