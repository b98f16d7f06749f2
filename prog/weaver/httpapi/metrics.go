package httpapi

import (
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"
)

// MetricsContentType is the Prometheus text exposition format 0.0.4.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

type connKey struct{ encryption, state, typ string }

// WriteMetrics writes the Prometheus text exposition of the report. It
// has the weave_* series of Weave Net 2.8.1's /metrics (the IPAM and DNS
// gauges only when those subsystems report) and never dereferences a
// missing subsystem. Label sets appear only for combinations that exist.
func WriteMetrics(w io.Writer, rep *Report) error {
	var b strings.Builder
	header := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	header("go_goroutines", "gauge", "Number of goroutines that currently exist.")
	fmt.Fprintf(&b, "go_goroutines %d\n", runtime.NumGoroutine())
	header("go_info", "gauge", "Information about the Go environment.")
	fmt.Fprintf(&b, "go_info{version=%q} 1\n", runtime.Version())

	header("weave_connection_terminations_total", "counter", "Number of peer-to-peer connections terminated.")
	fmt.Fprintf(&b, "weave_connection_terminations_total %d\n", rep.Router.TerminationCount)
	header("weave_connections", "gauge", "Number of peer-to-peer connections.")
	for _, kv := range connectionSeries(rep.Router.Connections) {
		fmt.Fprintf(&b, "weave_connections{encryption=%q,state=%q,type=%q} %d\n",
			kv.key.encryption, kv.key.state, kv.key.typ, kv.n)
	}
	if d := rep.DNSSummary; d != nil {
		header("weave_dns_entries", "gauge", "Number of live DNS entries this peer originates.")
		fmt.Fprintf(&b, "weave_dns_entries %d\n", d.OwnEntries)
	}
	header("weave_flows", "gauge", "Number of flows in the kernel datapath (fast datapath only).")
	b.WriteString("weave_flows 0\n")
	if m := rep.IPAMMetrics; m != nil {
		writeIPAMMetrics(&b, header, m)
	}
	if t := rep.LivenessTransitions; t != nil {
		header("weave_liveness_transitions_total", "counter", "Number of times a peer entered a liveness state.")
		for _, st := range slices.Sorted(maps.Keys(t)) {
			fmt.Fprintf(&b, "weave_liveness_transitions_total{state=%q} %d\n", st, t[st])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type connCount struct {
	key connKey
	n   int
}

func connectionSeries(conns []ConnectionReport) []connCount {
	counts := map[connKey]int{}
	for _, c := range conns {
		counts[connectionKey(c)]++
	}
	out := make([]connCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, connCount{k, n})
	}
	slices.SortFunc(out, func(a, b connCount) int {
		return strings.Compare(a.key.encryption+"\x00"+a.key.state+"\x00"+a.key.typ,
			b.key.encryption+"\x00"+b.key.state+"\x00"+b.key.typ)
	})
	return out
}

// connectionKey labels a connection like Weave: type is the overlay name
// ("unknown" for targets without one), encryption is "yes" or "".
func connectionKey(c ConnectionReport) connKey {
	k := connKey{state: c.State, typ: "unknown"}
	if name, ok := c.Attrs["name"].(string); ok && name != "" {
		k.typ = name
	}
	if enc, ok := c.Attrs["encrypted"].(bool); ok && enc {
		k.encryption = "yes"
	}
	return k
}

func writeIPAMMetrics(b *strings.Builder, header func(name, typ, help string), m *IPAMMetrics) {
	header("weave_ipam_pending_allocates", "gauge", "Number of pending allocates.")
	fmt.Fprintf(b, "weave_ipam_pending_allocates %d\n", m.PendingAllocates)
	header("weave_ipam_pending_claims", "gauge", "Number of pending claims.")
	fmt.Fprintf(b, "weave_ipam_pending_claims %d\n", m.PendingClaims)
	header("weave_ipam_unreachable_count", "gauge", "Number of unreachable peers.")
	fmt.Fprintf(b, "weave_ipam_unreachable_count %d\n", m.UnreachableCount)
	header("weave_ipam_unreachable_percentage", "gauge", "Percentage of IP addresses owned  by unreachable peers.")
	fmt.Fprintf(b, "weave_ipam_unreachable_percentage %g\n", m.UnreachablePercent)
	header("weave_ips", "gauge", "Number of IP addresses.")
	fmt.Fprintf(b, "weave_ips{state=\"local-used\"} %d\n", m.LocalUsed)
	header("weave_max_ips", "gauge", "Size of IP address space used by allocator.")
	fmt.Fprintf(b, "weave_max_ips %d\n", m.MaxIPs)
}
