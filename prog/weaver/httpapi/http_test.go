package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeBackend records calls and returns a fixed report.
type fakeBackend struct {
	mu         sync.Mutex
	rep        Report
	connectErr []error
	connected  [][]string
	replace    []bool
	forgotten  [][]string
	exposed    []netip.Prefix
	skipNAT    []bool
	panics     bool
}

var _ Backend = (*fakeBackend)(nil)

func (f *fakeBackend) Report() Report {
	if f.panics {
		panic("boom")
	}
	return f.rep
}

func (f *fakeBackend) Connect(peers []string, replace bool) []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connected = append(f.connected, peers)
	f.replace = append(f.replace, replace)
	return f.connectErr
}

func (f *fakeBackend) Forget(peers []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten = append(f.forgotten, peers)
	return nil
}

func (f *fakeBackend) Expose(addr netip.Prefix, skipNAT bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exposed = append(f.exposed, addr)
	f.skipNAT = append(f.skipNAT, skipNAT)
	return nil
}

func sampleReport() Report {
	return Report{
		Ready:   true,
		Version: "1.2.3",
		Router: RouterReport{
			Protocol: "weave", ProtocolMinVersion: 1, ProtocolMaxVersion: 2,
			Name: "aa:00:00:00:00:01", NickName: "h1", Port: 6783, Encryption: true,
			Peers: []PeerReport{{Name: "aa:00:00:00:00:01", NickName: "h1", Connections: []PeerConnection{
				{Name: "aa:00:00:00:00:02", NickName: "h2", Address: "192.168.100.2:6783", Outbound: true, Established: true},
			}}},
			Connections: []ConnectionReport{
				{Address: "192.168.100.2:6783", Outbound: true, State: "established", Info: "encrypted   sleeve aa:00:00:00:00:02(h2)",
					Attrs: map[string]any{"name": "sleeve", "mtu": 1414, "encrypted": true}},
				{Address: "192.168.100.3:6783", Outbound: true, State: "connecting"},
				{Address: "192.168.100.4:6783", Outbound: true, State: "failed", Info: "no route, retry: never"},
			},
			Targets:          []string{"192.168.100.2", "192.168.100.3"},
			TerminationCount: 3,
			TrustedSubnets:   []string{},
			Interface:        CaptureInterface,
		},
	}
}

type apiTest struct {
	t  *testing.T
	be *fakeBackend
	h  http.Handler
}

func newAPITest(t *testing.T, mod func(*APIConfig)) *apiTest {
	be := &fakeBackend{rep: sampleReport()}
	cfg := APIConfig{Backend: be, IPAM: "10.32.0.0/12"}
	if mod != nil {
		mod(&cfg)
	}
	return &apiTest{t: t, be: be, h: NewAPIHandler(cfg)}
}

func (a *apiTest) do(method, target, body string, hdr ...string) (int, http.Header, string) {
	a.t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, rec.Result().Header, string(b)
}

func TestAPIStatusTexts(t *testing.T) {
	a := newAPITest(t, nil)
	code, hdr, body := a.do("GET", "/status", "")
	if code != 200 || hdr.Get("Content-Type") != textContentType {
		t.Fatalf("GET /status: %d %q", code, hdr.Get("Content-Type"))
	}
	for _, want := range []string{
		"        Version: 1.2.3 (version check update disabled)\n",
		"    Connections: 3 (1 established, 1 failed, 1 connecting)\n",
		"          Peers: 1 (with 1 established connections)\n",
		"        Targets: 2\n",
		"        Service: ipam\n         Status: not running\n          Range: 10.32.0.0/12\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("GET /status lacks %q:\n%s", want, body)
		}
	}
	_, _, body = a.do("GET", "/status/connections", "")
	want := "-> 192.168.100.2:6783    established encrypted   sleeve aa:00:00:00:00:02(h2) encrypted=truemtu=1414\n" +
		"-> 192.168.100.3:6783    connecting   \n" +
		"-> 192.168.100.4:6783    failed      no route, retry: never \n"
	if body != want {
		t.Errorf("connections:\n%q\nwant\n%q", body, want)
	}
	if _, _, body = a.do("GET", "/status/targets", ""); body != "192.168.100.2\n192.168.100.3\n" {
		t.Errorf("targets: %q", body)
	}
	if _, _, body = a.do("GET", "/status/peers", ""); !strings.HasPrefix(body, "aa:00:00:00:00:01(h1)\n   -> 192.168.100.2:6783") {
		t.Errorf("peers: %q", body)
	}
}

func TestAPIStatusNotReady(t *testing.T) {
	a := newAPITest(t, nil)
	a.be.rep.Ready = false
	for _, p := range []string{"/status", "/status/peers"} {
		if code, _, _ := a.do("GET", p, ""); code != http.StatusServiceUnavailable {
			t.Errorf("GET %s before ready = %d, want 503", p, code)
		}
	}
}

func TestAPIStatusIPAM(t *testing.T) {
	a := newAPITest(t, nil)
	if code, _, body := a.do("GET", "/status/ipam", ""); code != 503 || body != "ipam: not running\n" {
		t.Errorf("ipam on: %d %q", code, body)
	}
	a = newAPITest(t, func(c *APIConfig) { c.IPAM = "" })
	if code, _, body := a.do("GET", "/status/ipam", ""); code != 503 || body != "IPAM disabled\n" {
		t.Errorf("ipam off: %d %q", code, body)
	}
	if _, _, body := a.do("GET", "/status", ""); strings.Contains(body, "ipam") {
		t.Errorf("status mentions ipam while off:\n%s", body)
	}
}

// TestAPIIPAMRoutes checks that the allocator's routes reach IPAMHandler on
// the full API only, and that the status text and gauges come from the report.
func TestAPIIPAMRoutes(t *testing.T) {
	var got []string
	ipamH := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path)
		_, _ = w.Write([]byte("ipam"))
	})
	a := newAPITest(t, func(c *APIConfig) { c.IPAMHandler = ipamH })
	a.be.rep.IPAMSummary = &IPAMSummary{Status: "awaiting consensus (quorum: 2, known: 1)", Range: "10.32.0.0/12", DefaultSubnet: "10.32.0.0/12"}
	a.be.rep.IPAMMetrics = &IPAMMetrics{LocalUsed: 3, MaxIPs: 1 << 20, UnreachablePercent: 12.5}
	reqs := []string{"POST /ip/c1", "PUT /ip/c1/10.32.0.1/12", "GET /ip", "DELETE /ip/c1", "GET /ipinfo/defaultsubnet",
		"GET /ring", "DELETE /peer", "DELETE /peer/aa:00:00:00:00:02", "GET /status/ipam"}
	for _, r := range reqs {
		m, p, _ := strings.Cut(r, " ")
		if code, _, body := a.do(m, p, ""); code != 200 || body != "ipam" {
			t.Errorf("%s: %d %q, want the IPAM handler", r, code, body)
		}
	}
	if strings.Join(got, ",") != strings.Join(reqs, ",") {
		t.Errorf("IPAM handler saw %q", got)
	}
	if _, _, body := a.do("GET", "/status", ""); !strings.Contains(body, "         Status: awaiting consensus (quorum: 2, known: 1)\n") {
		t.Errorf("status lacks the allocator state:\n%s", body)
	}
	_, _, body := a.do("GET", "/metrics", "")
	for _, want := range []string{"weave_ips{state=\"local-used\"} 3\n", "weave_max_ips 1.048576e+06\n", "weave_ipam_unreachable_percentage 12.5\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	ro := newAPITest(t, func(c *APIConfig) { c.IPAMHandler = ipamH; c.ReadOnly = true })
	if code, _, _ := ro.do("POST", "/ip/c1", ""); code != http.StatusNotFound {
		t.Errorf("read-only POST /ip/c1 = %d, want 404", code)
	}
	if code, _, body := ro.do("GET", "/status/ipam", ""); code != 200 || body != "ipam" {
		t.Errorf("read-only /status/ipam = %d %q", code, body)
	}
}

// TestAPIReportFormats: JSON needs Accept: application/json (which wins
// over format, as 2.8.1's route order has it); otherwise exactly one
// format parameter, or 2.8.1's 400.
func TestAPIReportFormats(t *testing.T) {
	a := newAPITest(t, nil)
	for _, c := range []struct {
		target, accept string
		code           int
		body           string
	}{
		{"/report", "", 400, "error: must supply one format parameter\n"},
		{"/report?format=a&format=b", "", 400, "error: must supply one format parameter\n"},
		{"/report?format={{.Version}}", "", 200, "1.2.3"},
		{"/report?format={{.Version}}", "application/json", 200, "{\n    \"Ready\""},
	} {
		code, _, body := a.do("GET", c.target, "", "Accept", c.accept)
		if code != c.code || !strings.HasPrefix(body, c.body) {
			t.Errorf("GET %s (Accept %q) = %d %q, want %d %q", c.target, c.accept, code, body, c.code, c.body)
		}
	}
}

func TestAPIReportJSON(t *testing.T) {
	a := newAPITest(t, nil)
	code, hdr, body := a.do("GET", "/report", "", "Accept", "application/json")
	if code != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /report: %d %q", code, hdr.Get("Content-Type"))
	}
	if !strings.HasPrefix(body, "{\n    \"Ready\": true,\n    \"Version\": \"1.2.3\",\n    \"VersionCheck\": {") {
		t.Errorf("report prefix:\n%s", body[:min(len(body), 200)])
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["IPAM"]; ok {
		t.Error("IPAM present although nil")
	}
	var router map[string]any
	if err := json.Unmarshal(m["Router"], &router); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"Protocol", "Peers", "Connections", "Targets", "OverlayDiagnostics", "TrustedSubnets", "Interface", "CaptureStats", "MACs"} {
		if _, ok := router[k]; !ok {
			t.Errorf("Router.%s missing", k)
		}
	}
	if router["Interface"] != "vethwe-pcap (via AF_PACKET)" {
		t.Errorf("Interface = %v", router["Interface"])
	}
}

func TestAPIReportTemplate(t *testing.T) {
	a := newAPITest(t, nil)
	cases := []struct {
		format   string
		code     int
		body     string
		contains bool
	}{
		{"{{.Version}}", 200, "1.2.3", false},
		{"{{.Router.Name}}", 200, "aa:00:00:00:00:01", false},
		{"{{json .Router.Targets}}", 200, `["192.168.100.2","192.168.100.3"]`, false},
		{"{{.Version", 400, "invalid format template: ", true},
		{"{{.NoSuchField}}", 400, "format template failed: ", true},
	}
	for _, c := range cases {
		code, _, body := a.do("GET", "/report?format="+url.QueryEscape(c.format), "")
		ok := body == c.body
		if c.contains {
			ok = strings.HasPrefix(body, c.body) && strings.Count(body, "\n") == 1
		}
		if code != c.code || !ok {
			t.Errorf("format %q: %d %q, want %d %q", c.format, code, body, c.code, c.body)
		}
	}
}

func TestAPIConnectForget(t *testing.T) {
	a := newAPITest(t, nil)
	if code, _, _ := a.do("POST", "/connect", "peer=10.0.0.1&peer=10.0.0.2:6783&replace=true"); code != 200 {
		t.Fatalf("connect: %d", code)
	}
	if !slices.Equal(a.be.connected[0], []string{"10.0.0.1", "10.0.0.2:6783"}) || !a.be.replace[0] {
		t.Errorf("backend got %v replace=%v", a.be.connected, a.be.replace)
	}
	a.be.connectErr = []error{errors.New("invalid peer name \"a:b:c\", should be host[:port]"), errors.New("lookup x: no such\nhost")}
	code, _, body := a.do("POST", "/connect", "peer=a:b:c&peer=x")
	if code != 400 || body != "invalid peer name \"a:b:c\", should be host[:port]\nlookup x: no such host\n" {
		t.Errorf("connect errors: %d %q", code, body)
	}
	if a.be.replace[1] {
		t.Error("replace set without replace=true")
	}
	if code, _, _ := a.do("POST", "/forget", "peer=10.0.0.1"); code != 200 || !slices.Equal(a.be.forgotten[0], []string{"10.0.0.1"}) {
		t.Errorf("forget: %d %v", code, a.be.forgotten)
	}
}

func TestAPIErrors(t *testing.T) {
	a := newAPITest(t, nil)
	cases := []struct {
		method, path, body string
		code               int
	}{
		{"POST", "/status", "", http.StatusMethodNotAllowed},
		{"GET", "/connect", "", http.StatusMethodNotAllowed},
		{"PUT", "/report", "", http.StatusMethodNotAllowed},
		{"GET", "/nope", "", http.StatusNotFound},
		{"GET", "/status/", "", http.StatusNotFound},
		{"POST", "/connect", "peer=%zz", http.StatusBadRequest},
		{"POST", "/forget", "peer=%zz", http.StatusBadRequest},
		{"GET", "/report?format=%zz", "", http.StatusBadRequest},
		{"DELETE", "/peer", "", http.StatusNoContent},
		{"GET", "/status/dns", "", http.StatusInternalServerError}, // --no-dns, as 2.8.1
	}
	for _, c := range cases {
		code, _, body := a.do(c.method, c.path, c.body)
		if code != c.code {
			t.Errorf("%s %s: %d %q, want %d", c.method, c.path, code, body, c.code)
		}
		if code == 400 && strings.Count(body, "\n") != 1 {
			t.Errorf("%s %s: 400 body not one line: %q", c.method, c.path, body)
		}
	}
	if len(a.be.connected)+len(a.be.forgotten) != 0 {
		t.Error("backend called for a malformed form")
	}
}

func TestAPIReadOnly(t *testing.T) {
	a := newAPITest(t, func(c *APIConfig) { c.ReadOnly = true })
	for _, p := range []string{"/status", "/report?format=x", "/metrics", "/status/peers"} {
		if code, _, _ := a.do("GET", p, ""); code != 200 {
			t.Errorf("read-only GET %s = %d", p, code)
		}
	}
	if code, _, _ := a.do("POST", "/connect", "peer=1.2.3.4"); code != http.StatusNotFound {
		t.Errorf("read-only POST /connect = %d, want 404", code)
	}
	if code, _, _ := a.do("DELETE", "/peer", ""); code != http.StatusNotFound {
		t.Errorf("read-only DELETE /peer = %d, want 404", code)
	}
}

func TestAPIRecoversFromPanic(t *testing.T) {
	a := newAPITest(t, nil)
	a.be.panics = true
	if code, _, body := a.do("GET", "/status", ""); code != 500 || body != "internal error\n" {
		t.Errorf("panicking backend: %d %q", code, body)
	}
}

func TestAPIExpose(t *testing.T) {
	a := newAPITest(t, nil)
	if code, _, body := a.do("POST", "/expose/10.32.0.5/12", ""); code != http.StatusNoContent {
		t.Fatalf("expose: %d %q", code, body)
	}
	if len(a.be.exposed) != 1 || a.be.exposed[0] != netip.MustParsePrefix("10.32.0.5/12") {
		t.Errorf("backend got %v", a.be.exposed)
	}
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"POST", "/expose/10.32.0.5/99", 400},
		{"POST", "/expose/fe80::1/64", 400},
		{"POST", "/expose/banana/12", 400},
		{"POST", "/expose/10.32.0.5/12?skipNAT=yes", 400},
		{"GET", "/expose/10.32.0.5/12", 405},
		{"POST", "/expose/10.32.0.5", 404},
	} {
		if code, _, body := a.do(c.method, c.path, ""); code != c.code {
			t.Errorf("%s %s: %d %q, want %d", c.method, c.path, code, body, c.code)
		}
	}
	if len(a.be.exposed) != 1 {
		t.Errorf("backend called for rejected requests: %v", a.be.exposed)
	}
	if code, _, body := a.do("POST", "/expose/10.32.0.6/12?skipNAT=true", ""); code != http.StatusNoContent {
		t.Fatalf("expose skipNAT: %d %q", code, body)
	}
	if !slices.Equal(a.be.skipNAT, []bool{false, true}) {
		t.Errorf("skipNAT passed as %v", a.be.skipNAT)
	}
}

// TestAPIPProfOnlyWhenAsked: /debug/pprof/ is 404 by default and on the
// read-only listener, and the profiling index with PProf (--pprof).
func TestAPIPProfOnlyWhenAsked(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*APIConfig)
		code int
	}{
		{"default", nil, http.StatusNotFound},
		{"--pprof", func(c *APIConfig) { c.PProf = true }, http.StatusOK},
		{"--pprof, read-only listener", func(c *APIConfig) { c.PProf, c.ReadOnly = true, true }, http.StatusNotFound},
	} {
		a := newAPITest(t, c.mod)
		code, _, body := a.do("GET", "/debug/pprof/", "")
		if code != c.code || (code == 200 && !strings.Contains(body, "goroutine")) {
			t.Errorf("%s: GET /debug/pprof/ = %d, want %d", c.name, code, c.code)
		}
	}
}
