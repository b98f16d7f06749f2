package httpapi

import (
	"strings"
	"testing"
)

// TestProxyAddrs: GET /proxyaddrs, the Proxy section of the report and the
// proxy lines of the status text, as 2.8.1 has them; empty and absent
// while the proxy is off.
func TestProxyAddrs(t *testing.T) {
	a := newAPITest(t, nil)
	if code, _, body := a.do("GET", "/proxyaddrs", ""); code != 200 || body != "" {
		t.Fatalf("proxy off: %d %q", code, body)
	}
	if _, _, body := a.do("GET", "/report", "", "Accept", "application/json"); strings.Contains(body, `"Proxy"`) {
		t.Fatalf("proxy off, report has a Proxy section:\n%s", body)
	}
	a.be.rep.Proxy = &ProxyReport{Addresses: []string{"unix:///var/run/weave/weave.sock", "tcp://0.0.0.0:12375"}}
	if code, _, body := a.do("GET", "/proxyaddrs", ""); code != 200 || body != "unix:///var/run/weave/weave.sock tcp://0.0.0.0:12375" {
		t.Fatalf("GET /proxyaddrs: %d %q", code, body)
	}
	_, _, body := a.do("GET", "/report", "", "Accept", "application/json")
	if !strings.Contains(body, "\"Proxy\": {\n        \"Addresses\": [\n            \"unix:///var/run/weave/weave.sock\",") {
		t.Fatalf("report:\n%s", body)
	}
	_, _, body = a.do("GET", "/status", "")
	want := "\n        Service: proxy\n        Address: unix:///var/run/weave/weave.sock\n        Address: tcp://0.0.0.0:12375\n"
	if !strings.HasSuffix(body, want) {
		t.Fatalf("status:\n%s\nwant it to end with\n%s", body, want)
	}
	ro := newAPITest(t, func(c *APIConfig) { c.ReadOnly = true })
	if code, _, _ := ro.do("GET", "/proxyaddrs", ""); code != 404 {
		t.Fatalf("read-only API serves /proxyaddrs: %d", code)
	}
}
