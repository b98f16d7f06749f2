package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// With --no-dns (as every 2.8.1 capture ran) /status/dns is 2.8.1's 500.
func TestStatusDNSDisabledGolden(t *testing.T) {
	a := newAPITest(t, nil)
	for _, g := range goldenHosts(t) {
		want := string(g.read(t, "status-dns.txt"))
		code, _, body := a.do("GET", "/status/dns", "")
		if code != http.StatusInternalServerError || body != want {
			t.Errorf("%s/%s: %d %q, want 500 %q", g.scenario, g.host, code, body, want)
		}
	}
}

// With weaveDNS on, its handler serves the /name routes and /status/dns,
// and `weave status` gains 2.8.1's dns section.
func TestDNSRoutesAndStatus(t *testing.T) {
	var hits []string
	dnsH := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits = append(hits, r.Method+" "+r.URL.Path)
		w.WriteHeader(http.StatusNoContent)
	})
	a := newAPITest(t, func(c *APIConfig) { c.DNSHandler = dnsH })
	a.be.rep.DNSSummary = &DNSSummary{Domain: "weave.local.", Upstream: []string{"192.0.2.53", "192.0.2.54"}, TTL: 1, Entries: 3}
	for _, r := range []string{"PUT /name/c1/10.32.0.1", "DELETE /name", "DELETE /name/c1", "GET /name", "GET /domain",
		"GET /dns-address", "GET /status/dns"} {
		m, p, _ := strings.Cut(r, " ")
		if code, _, _ := a.do(m, p, ""); code != http.StatusNoContent {
			t.Errorf("%s = %d, not routed to weaveDNS", r, code)
		}
	}
	if len(hits) != 7 {
		t.Errorf("weaveDNS saw %v", hits)
	}
	_, _, body := a.do("GET", "/status", "")
	want := "\n        Service: dns\n         Domain: weave.local.\n       Upstream: 192.0.2.53, 192.0.2.54\n            TTL: 1\n        Entries: 3\n"
	if !strings.HasSuffix(body, want) {
		t.Errorf("status ends %q, want %q", body[max(0, len(body)-len(want)-20):], want)
	}
	ro := newAPITest(t, func(c *APIConfig) { c.DNSHandler = dnsH; c.ReadOnly = true })
	if code, _, _ := ro.do("PUT", "/name/c1/10.32.0.1", ""); code != http.StatusNotFound {
		t.Errorf("read-only API accepted PUT /name: %d", code)
	}
}
