package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/linkstate"
)

// fakePage is a PageSource whose report the test changes.
type fakePage struct {
	mu  sync.Mutex
	rep Report
}

func (f *fakePage) Report() Report {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rep
}
func (f *fakePage) LinkSummaries() map[string]linkstate.Summary { return nil }
func (f *fakePage) Containers() map[string][]string             { return nil }

func (f *fakePage) set(rep Report) {
	f.mu.Lock()
	f.rep = rep
	f.mu.Unlock()
}

func pageReport(state string) Report {
	return Report{Ready: true, Version: "test", Router: RouterReport{Name: "aa:00:00:00:00:01", NickName: "h1",
		Peers:       []PeerReport{{Name: "aa:00:00:00:00:01", NickName: "h1"}},
		Connections: []ConnectionReport{{Address: "192.168.100.2:6783", Outbound: true, State: state, Info: "x"}}}}
}

func newPageServer(t *testing.T, src *fakePage, cfg PageConfig) *httptest.Server {
	t.Helper()
	cfg.Source = src
	srv := httptest.NewServer(WithPage(NewAPIHandler(APIConfig{Backend: &fakeBackend{rep: src.Report()}, ReadOnly: true}), cfg))
	t.Cleanup(srv.Close)
	return srv
}

// TestPageRoutesReadOnlyWithCSP: every route of the page carries the
// strict CSP and refuses every method but GET and HEAD; the read-only API
// still answers behind it.
func TestPageRoutesReadOnlyWithCSP(t *testing.T) {
	src := &fakePage{rep: pageReport("connecting")}
	srv := newPageServer(t, src, PageConfig{})
	for _, path := range PagePaths {
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			req, _ := http.NewRequest(m, srv.URL+path, strings.NewReader("x=1"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s = %d (Allow %q), want 405 GET, HEAD", m, path, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
		if path == "/ui/events" {
			continue // a stream: checked below
		}
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") != PageCSP || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s = %d, CSP %q; want 200 with the page CSP", path, resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
		}
	}
	for _, path := range []string{"/status", "/report?format={{.Version}}"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s behind the page = %d, want 200", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"/ui/other", "/connect"} {
		resp, err := http.Post(srv.URL+path, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 || resp.StatusCode == 204 {
			t.Errorf("POST %s on the status address = %d", path, resp.StatusCode)
		}
	}
}

// TestPageNotOnReadWriteAPI: the read-write API (--http-addr) serves
// none of the page's routes.
func TestPageNotOnReadWriteAPI(t *testing.T) {
	srv := httptest.NewServer(NewAPIHandler(APIConfig{Backend: &fakeBackend{rep: pageReport("connecting")}}))
	defer srv.Close()
	for _, path := range PagePaths {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s on the read-write API = %d, want 404", path, resp.StatusCode)
		}
	}
}

// TestPageEventsFollowChanges: the event stream sends the feed at once and
// again within a poll of a change; it is bounded in clients.
func TestPageEventsFollowChanges(t *testing.T) {
	src := &fakePage{rep: pageReport("connecting")}
	srv := newPageServer(t, src, PageConfig{Poll: 100 * time.Millisecond, MaxClients: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/ui/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan Feed, 4)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var f Feed
				if json.Unmarshal([]byte(data), &f) == nil {
					events <- f
				}
			}
		}
		close(events)
	}()
	next := func(what string) Feed {
		select {
		case f, ok := <-events:
			if !ok {
				t.Fatalf("stream ended waiting for %s", what)
			}
			return f
		case <-time.After(2 * time.Second):
			t.Fatalf("no event within 2 s: %s", what)
		}
		return Feed{}
	}
	if f := next("first feed"); len(f.Links) != 1 || f.Links[0].Kind != KindConnecting {
		t.Fatalf("first feed links %+v, want one connecting target", f.Links)
	}
	second, err := http.Get(srv.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	second.Body.Close()
	if second.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("second stream with MaxClients 1 = %d, want 503", second.StatusCode)
	}
	start := time.Now()
	src.set(pageReport("failed"))
	if f := next("the change"); len(f.Links) != 1 || f.Links[0].Kind != KindFailed {
		t.Fatalf("after the change links %+v, want one failed target", f.Links)
	}
	t.Logf("change reached the stream in %v", time.Since(start).Round(time.Millisecond))
}

// TestPageAssetsSelfContained: the page names no other origin, has no
// inline script or style, and the script builds DOM from text only.
func TestPageAssetsSelfContained(t *testing.T) {
	for _, name := range []string{"ui/index.html", "ui/app.js", "ui/app.css", "ui/icon.svg"} {
		b, err := uiFiles.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, bad := range []string{"http://", "https://", "//cdn", "@import", "url(", "innerHTML", "outerHTML", "eval(", "new Function", "style=\"", "onclick=\"", "<script>"} {
			if name == "ui/icon.svg" && bad == "http://" {
				continue // the SVG namespace URI
			}
			if name == "ui/app.js" && bad == "http://" && strings.Count(s, "http://") == 1 && strings.Contains(s, `"http://www.w3.org/2000/svg"`) {
				continue
			}
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
}

// TestStatusLinksRoute: GET /status/links answers on both APIs.
func TestStatusLinksRoute(t *testing.T) {
	for _, ro := range []bool{false, true} {
		srv := httptest.NewServer(NewAPIHandler(APIConfig{Backend: &fakeBackend{rep: pageReport("failed")}, ReadOnly: ro}))
		resp, err := http.Get(srv.URL + "/status/links")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "LINK ") || !strings.Contains(string(body), "192.168.100.2:6783  failed") {
			t.Errorf("read-only %v: GET /status/links = %d\n%s", ro, resp.StatusCode, body)
		}
	}
}
