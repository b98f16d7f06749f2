package httpapi

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func parseMetrics(t *testing.T, what, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("%s does not parse as Prometheus text: %v\n%s", what, err, text)
	}
	return fams
}

// labelSets lists each sample's label names, sorted, one string per set.
func labelSets(f *dto.MetricFamily) []string {
	var out []string
	for _, m := range f.GetMetric() {
		var names []string
		for _, l := range m.GetLabel() {
			names = append(names, l.GetName())
		}
		out = append(out, strings.Join(names, ","))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// samples renders a family's samples as "labels value", sorted.
func samples(f *dto.MetricFamily) []string {
	var out []string
	for _, m := range f.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
		out = append(out, fmt.Sprintf("{%s} %g", strings.Join(ls, ","), v))
	}
	sort.Strings(out)
	return out
}

// ipamMetricsOf derives the IPAM gauges from a 2.8.1 report's IPAM
// section, as the daemon derives them from the allocator.
func ipamMetricsOf(t *testing.T, rep *Report) *IPAMMetrics {
	m, ok := rep.IPAM.(map[string]any)
	if !ok {
		t.Fatal("golden report has no IPAM section")
	}
	n := func(k string) int { v, _ := m[k].(float64); return int(v) }
	l := func(k string) int { v, _ := m[k].([]any); return len(v) }
	return &IPAMMetrics{LocalUsed: n("ActiveIPs"), MaxIPs: n("RangeNumIPs"),
		PendingAllocates: l("PendingAllocates"), PendingClaims: l("PendingClaims")}
}

// TestMetricsMatchWeave281 feeds the status of real 2.8.1 routers through
// our /metrics and compares with what those routers served: every family
// 2.8.1 has is there with its type and label names, and every weave_*
// family has exactly 2.8.1's samples (label values and value formats).
func TestMetricsMatchWeave281(t *testing.T) {
	for _, host := range []string{"h1", "h2"} {
		g := goldenHost{"plain-ipam", host}
		rep := g.loadReport(t)
		rep.IPAMMetrics = ipamMetricsOf(t, rep)
		a := newAPITest(t, nil)
		a.be.rep = *rep
		code, hdr, body := a.do("GET", "/metrics", "")
		if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain; version=0.0.4") {
			t.Fatalf("%s: GET /metrics: %d %q", host, code, hdr.Get("Content-Type"))
		}
		ours := parseMetrics(t, "our /metrics", body)
		theirs := parseMetrics(t, "2.8.1's /metrics", string(g.read(t, "metrics-httpaddr.txt")))
		for name, want := range theirs {
			got, ok := ours[name]
			switch {
			case !ok:
				t.Errorf("%s: family %s (2.8.1 has it) missing", host, name)
			case got.GetType() != want.GetType():
				t.Errorf("%s: %s is %v, 2.8.1's is %v", host, name, got.GetType(), want.GetType())
			case !slices.Equal(labelSets(got), labelSets(want)):
				t.Errorf("%s: %s labels %v, 2.8.1's %v", host, name, labelSets(got), labelSets(want))
			case strings.HasPrefix(name, "weave_") && !slices.Equal(samples(got), samples(want)):
				t.Errorf("%s: %s samples %v, 2.8.1's %v", host, name, samples(got), samples(want))
			}
		}
		for name := range ours {
			if _, ok := theirs[name]; !ok && strings.HasPrefix(name, "weave_") {
				t.Errorf("%s: family %s not in 2.8.1's output for this status", host, name)
			}
		}
		if !strings.Contains(body, "weave_max_ips 1.048576e+06\n") {
			t.Errorf("%s: weave_max_ips not in 2.8.1's value format", host)
		}
	}
}

// TestMetricsSubsystemsAndTypes: with IPAM off there are no IPAM gauges
// (2.8.1 crashes there); each (state, type) that has a connection gets an
// encrypted and an unencrypted series; fastdp links are type "fastdp" and
// weave_flows appears with the fast datapath only; DNS adds its gauge.
func TestMetricsSubsystemsAndTypes(t *testing.T) {
	a := newAPITest(t, func(c *APIConfig) { c.IPAM = "" })
	_, _, body := a.do("GET", "/metrics", "")
	fams := parseMetrics(t, "/metrics", body)
	for name := range fams {
		if strings.HasPrefix(name, "weave_ip") || name == "weave_max_ips" || name == "weave_flows" || name == "weave_dns_entries" {
			t.Errorf("%s present without its subsystem", name)
		}
	}
	for _, prefix := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_open_fds"} {
		if fams[prefix] == nil {
			t.Errorf("runtime/process family %s missing", prefix)
		}
	}
	want := []string{
		"{encryption=,state=connecting,type=unknown} 1", "{encryption=,state=established,type=sleeve} 0",
		"{encryption=,state=failed,type=unknown} 1", "{encryption=yes,state=connecting,type=unknown} 0",
		"{encryption=yes,state=established,type=sleeve} 1", "{encryption=yes,state=failed,type=unknown} 0",
	}
	if got := samples(fams["weave_connections"]); !slices.Equal(got, want) {
		t.Errorf("weave_connections:\n got %v\nwant %v", got, want)
	}
	a.be.rep.Router.Connections = append(a.be.rep.Router.Connections, ConnectionReport{
		State: "established", Attrs: map[string]any{"name": "fastdp", "mtu": 1450}})
	a.be.rep.Router.OverlayDiagnostics = map[string]any{"fastdp": struct{}{}, "sleeve": nil}
	a.be.rep.DNSSummary = &DNSSummary{OwnEntries: 4}
	_, _, body = a.do("GET", "/metrics", "")
	fams = parseMetrics(t, "/metrics with fastdp", body)
	if got := samples(fams["weave_connections"]); !slices.Contains(got, "{encryption=,state=established,type=fastdp} 1") ||
		!slices.Contains(got, "{encryption=yes,state=established,type=fastdp} 0") {
		t.Errorf("fastdp series missing: %v", got)
	}
	if got := samples(fams["weave_flows"]); !slices.Equal(got, []string{"{} 0"}) {
		t.Errorf("weave_flows with fastdp: %v", got)
	}
	if got := samples(fams["weave_dns_entries"]); !slices.Equal(got, []string{"{} 4"}) {
		t.Errorf("weave_dns_entries: %v", got)
	}
	// weave_ipam_conflicts: absent until a heal conflicted, then the count
	// held now (back to 0 once resolved).
	a.be.rep.IPAMMetrics = &IPAMMetrics{MaxIPs: 256}
	if _, _, body = a.do("GET", "/metrics", ""); parseMetrics(t, "/metrics", body)["weave_ipam_conflicts"] != nil {
		t.Error("weave_ipam_conflicts present before any conflict")
	}
	a.be.rep.IPAMMetrics = &IPAMMetrics{MaxIPs: 256, Conflicts: 2, ConflictsSeen: 3}
	_, _, body = a.do("GET", "/metrics", "")
	if got := samples(parseMetrics(t, "/metrics", body)["weave_ipam_conflicts"]); !slices.Equal(got, []string{"{} 2"}) {
		t.Errorf("weave_ipam_conflicts: %v", got)
	}
}
