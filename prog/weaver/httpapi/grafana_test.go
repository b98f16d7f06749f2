package httpapi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/seedf75a49c6/weave/npc"
	"github.com/seedf75a49c6/weave/npc/controller"
	"github.com/seedf75a49c6/weave/npc/nft"
)

// dashboardPath is the Grafana dashboard shipped in the repository.
var dashboardPath = filepath.Join("..", "..", "..", "docs", "grafana", "weave.json")

// scrapeLabels are added by Prometheus to every series it scrapes; the
// dashboard may use them although weave does not export them.
var scrapeLabels = []string{"instance", "job"}

// exported maps each metric weave exports (weaver's weave_* families and
// weave-npc's weavenpc_*) to its labels, read from the collectors'
// descriptions.
func exported(t *testing.T) map[string][]string {
	t.Helper()
	descs := make(chan *prometheus.Desc, 64)
	reportCollector(func() Report { return Report{} }).Describe(descs)
	rec := &recordingRegisterer{}
	if _, err := controller.New(controller.Config{Client: fake.NewClientset(), NodeName: "n1", Enforcer: noEnforcer{}, Registerer: rec}); err != nil {
		t.Fatal(err)
	}
	for _, c := range rec.cs {
		c.Describe(descs)
	}
	close(descs)
	re := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	out := map[string][]string{}
	for d := range descs {
		m := re.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read metric description %s", d)
		}
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		out[m[1]] = labels
	}
	// A histogram's series.
	for name := range out {
		if name == "weavenpc_sync_duration_seconds" {
			out[name+"_bucket"] = []string{"le"}
			out[name+"_sum"], out[name+"_count"] = nil, nil
		}
	}
	return out
}

type recordingRegisterer struct{ cs []prometheus.Collector }

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	r.cs = append(r.cs, c)
	return nil
}
func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) { r.cs = append(r.cs, cs...) }
func (r *recordingRegisterer) Unregister(prometheus.Collector) bool    { return false }

type noEnforcer struct{}

func (noEnforcer) Apply(*npc.Model) (nft.Stats, error) { return nft.Stats{}, nil }
func (noEnforcer) Blocked() ([]nft.Blocked, error)     { return nil, nil }

// promFunctions are the PromQL functions and aggregations the dashboard
// may call; keywords are PromQL's other words.
var (
	promFunctions = []string{"sum", "max", "min", "avg", "count", "rate", "irate", "increase", "histogram_quantile",
		"label_values", "topk", "bottomk", "delta", "deriv", "abs", "clamp_min", "vector"}
	promKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or", "unless"}
	promToken    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|\[[^\]]*\]|\$\{?\w+\}?|[A-Za-z_:][A-Za-z0-9_:]*|\d+(?:\.\d+)?|=~|!~|!=|\S`)
)

// checkQuery returns what in a PromQL expression names a metric, label
// or function that is not known.
func checkQuery(expr string, metrics map[string][]string) []string {
	toks := promToken.FindAllString(expr, -1)
	var problems, used []string
	var grouping []string
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		next := ""
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case !regexp.MustCompile(`^[A-Za-z_:]`).MatchString(tok):
			continue
		case slices.Contains([]string{"by", "without", "on", "ignoring"}, tok) && next == "(":
			for i += 2; i < len(toks) && toks[i] != ")"; i++ {
				if toks[i] != "," {
					grouping = append(grouping, toks[i])
				}
			}
		case slices.Contains(promKeywords, tok):
		case slices.Contains(promFunctions, tok) && slices.Contains([]string{"(", "by", "without"}, next):
			if tok == "label_values" && i+4 < len(toks) { // label_values(metric, label)
				grouping = append(grouping, toks[i+4])
				toks[i+4] = ","
			}
		case next == "(":
			problems = append(problems, "unknown function "+tok)
		default:
			labels, ok := metrics[tok]
			if !ok {
				problems = append(problems, "metric "+tok+" is not exported")
				continue
			}
			used = append(used, tok)
			if next != "{" {
				continue
			}
			for i += 2; i < len(toks) && toks[i] != "}"; i++ {
				if regexp.MustCompile(`^[A-Za-z_]`).MatchString(toks[i]) && i+1 < len(toks) && strings.Contains("= =~ != !~", toks[i+1]) {
					if !slices.Contains(labels, toks[i]) && !slices.Contains(scrapeLabels, toks[i]) {
						problems = append(problems, fmt.Sprintf("metric %s has no label %s", tok, toks[i]))
					}
				}
			}
		}
	}
	for _, l := range grouping {
		known := slices.Contains(scrapeLabels, l)
		for _, m := range used {
			known = known || slices.Contains(metrics[m], l)
		}
		if !known {
			problems = append(problems, fmt.Sprintf("label %s is on none of %v", l, used))
		}
	}
	return problems
}

// dashboardQueries returns every PromQL expression of the dashboard:
// panel targets, nested panels and templating queries.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	var out []string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(e, k)
			}
		case []any:
			for _, e := range x {
				walk(e, key)
			}
		case string:
			if key == "expr" || (key == "query" && strings.Contains(x, "(")) {
				out = append(out, x)
			}
		}
	}
	walk(doc, "")
	return out
}

// TestGrafanaDashboardNamesOnlyExportedMetrics: every query of
// docs/grafana/weave.json names only metrics and labels weaver or
// weave-npc exports (plus the scrape's instance/job), and the dashboard
// covers the families the issue lists.
func TestGrafanaDashboardNamesOnlyExportedMetrics(t *testing.T) {
	metrics := exported(t)
	queries := dashboardQueries(t)
	if len(queries) < 10 {
		t.Fatalf("dashboard has %d queries", len(queries))
	}
	all := strings.Join(queries, "\n")
	for _, q := range queries {
		for _, p := range checkQuery(q, metrics) {
			t.Errorf("query %q: %s", q, p)
		}
	}
	for _, want := range []string{"weave_connections", "weave_connection_fallbacks", "weave_liveness_transitions_total",
		"weave_max_ips", "weave_ipam_unreachable_percentage", "weave_dns_entries", "weavenpc_blocked_connections_total",
		"weave_link_frames_total", "weave_link_bytes_total", "weave_link_rtt_seconds"} {
		if !regexp.MustCompile(`\b` + want + `\b`).MatchString(all) {
			t.Errorf("no panel shows %s", want)
		}
	}
}

// TestCheckQueryCatchesMistakes: the checker itself rejects unknown
// metrics, labels and functions.
func TestCheckQueryCatchesMistakes(t *testing.T) {
	metrics := exported(t)
	for _, q := range []string{
		`sum(weave_connection{state="established"})`,
		`sum by (peer) (weave_connections)`,
		`weave_connections{overlay="fastdp"}`,
		`rate_of(weave_link_frames_total[5m])`,
	} {
		if len(checkQuery(q, metrics)) == 0 {
			t.Errorf("checkQuery(%q) found nothing wrong", q)
		}
	}
	if p := checkQuery(`sum by (instance, le) (rate(weavenpc_sync_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval]))`, metrics); len(p) != 0 {
		t.Errorf("a valid query: %v", p)
	}
}
