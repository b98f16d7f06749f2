package dns

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func do(t *testing.T, h http.Handler, method, target string, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(method, target, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestHTTPNameRoutes(t *testing.T) {
	n, _ := newNS(t, peerA, &clock{t: time.Now()})
	dead := map[string]bool{"deadbeef": true}
	h := n.Handler(HTTPConfig{IsAlive: func(id string) bool { return !dead[id] }})
	put := func(id, addr, fqdn string, extra ...string) int {
		f := url.Values{"fqdn": {fqdn}}
		if len(extra) > 0 {
			f.Set("check-alive", "true")
		}
		return do(t, h, "PUT", "/name/"+id+"/"+addr, f).Code
	}
	for _, tc := range []struct {
		id, addr, fqdn string
		want           int
	}{
		{"0123456789abcdef", "10.32.0.1", "db.weave.local.", 204},
		{"feedfacefeedface", "10.32.0.2", "web.weave.local", 204},
		{Extern, "10.32.0.9", "ext.weave.local.", 204},
		{"x", "10.32.0.3", "db.example.com.", 400},
		{"x", "not-an-ip", "db.weave.local.", 400},
		{"x", "10.32.0.3", "", 400},
	} {
		if got := put(tc.id, tc.addr, tc.fqdn); got != tc.want {
			t.Errorf("PUT %s %s %q = %d, want %d", tc.id, tc.addr, tc.fqdn, got, tc.want)
		}
	}
	if got := put("deadbeef", "10.32.0.4", "dead.weave.local.", "check-alive"); got != 404 {
		t.Errorf("PUT for a dead container with check-alive = %d, want 404", got)
	}
	want := "db           10.32.0.1       0123456789ab aa:00:00:00:00:01\n" +
		"ext          10.32.0.9       weave:extern aa:00:00:00:00:01\n" +
		"web          10.32.0.2       feedfacefeed aa:00:00:00:00:01\n"
	if got := do(t, h, "GET", "/status/dns", nil).Body.String(); got != want {
		t.Errorf("status dns =\n%q\nwant\n%q", got, want)
	}
	if got := do(t, h, "GET", "/domain", nil).Body.String(); got != "weave.local." {
		t.Errorf("domain = %q", got)
	}
	if w := do(t, h, "DELETE", "/name/feedfacefeedface", nil); w.Code != 204 || len(n.Lookup("web.weave.local.")) != 0 {
		t.Errorf("DELETE by container: %d, web still %v", w.Code, n.Lookup("web.weave.local."))
	}
	if w := do(t, h, "DELETE", "/name/*/10.32.0.9?fqdn=ext.weave.local.", nil); w.Code != 204 || len(n.Lookup("ext.weave.local.")) != 0 {
		t.Errorf("DELETE by ip+fqdn: %d", w.Code)
	}
	if w := do(t, h, "DELETE", "/name/x/bad-ip", nil); w.Code != 400 {
		t.Errorf("DELETE bad ip = %d", w.Code)
	}
	var es []StatusEntry
	w := do(t, h, "GET", "/name", nil)
	if err := json.Unmarshal(w.Body.Bytes(), &es); err != nil || len(es) != 3 {
		t.Fatalf("GET /name = %s (%v)", w.Body, err)
	}
	if do(t, h, "DELETE", "/name", nil).Code != 204 || len(n.Lookup("db.weave.local.")) != 0 {
		t.Error("DELETE /name did not remove everything")
	}
	if got := do(t, h, "GET", "/dns-address", nil).Code; got != 404 {
		t.Errorf("dns-address without a server = %d", got)
	}
}
