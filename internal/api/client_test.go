package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
)

// recorded is what the fake router saw of one request.
type recorded struct {
	method, path, rawQuery, accept, ctype string
	form                                  map[string][]string
}

func fakeRouter(t *testing.T, code int, body string) (*Client, *[]recorded) {
	t.Helper()
	var got []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("parse form: %v", err)
		}
		got = append(got, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Accept"),
			r.Header.Get("Content-Type"), r.PostForm})
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return NewClient(Config{Addr: strings.TrimPrefix(srv.URL, "http://")}), &got
}

func TestStatusAndReport(t *testing.T) {
	ctx := context.Background()
	c, got := fakeRouter(t, 200, "        Version: unreleased\n")
	if s, err := c.Status(ctx, ""); err != nil || s != "        Version: unreleased\n" {
		t.Fatalf("Status = %q, %v", s, err)
	}
	if _, err := c.Status(ctx, "peers"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Report(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReportFormat(ctx, "{{.Router.Name}} x&y"); err != nil {
		t.Fatal(err)
	}
	r := *got
	if r[0].path != "/status" || r[1].path != "/status/peers" {
		t.Errorf("paths %q %q", r[0].path, r[1].path)
	}
	if r[2].path != "/report" || r[2].accept != "application/json" {
		t.Errorf("report request %+v", r[2])
	}
	if r[3].rawQuery != "format=%7B%7B.Router.Name%7D%7D+x%26y" {
		t.Errorf("template query = %q", r[3].rawQuery)
	}
}

func TestConnectForgetForm(t *testing.T) {
	ctx := context.Background()
	c, got := fakeRouter(t, 200, "")
	if err := c.Connect(ctx, []string{"10.0.0.1", "host2:6783"}, true); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx, []string{"10.0.0.3"}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Forget(ctx, []string{"10.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	r := *got
	if r[0].method != "POST" || r[0].path != "/connect" || r[0].ctype != "application/x-www-form-urlencoded" {
		t.Errorf("connect request %+v", r[0])
	}
	if p := r[0].form["peer"]; len(p) != 2 || p[0] != "10.0.0.1" || p[1] != "host2:6783" {
		t.Errorf("peers = %q", p)
	}
	if r[0].form["replace"][0] != "true" {
		t.Errorf("replace missing: %v", r[0].form)
	}
	if _, ok := r[1].form["replace"]; ok {
		t.Errorf("replace sent without --replace: %v", r[1].form)
	}
	if r[2].path != "/forget" || r[2].form["peer"][0] != "10.0.0.1" {
		t.Errorf("forget request %+v", r[2])
	}
}

func TestIPRoutes(t *testing.T) {
	ctx := context.Background()
	c, got := fakeRouter(t, 200, "10.32.0.1/12\n")
	a, err := c.AllocateIP(ctx, "c1", netip.MustParsePrefix("10.2.0.0/16"))
	if err != nil || a != netip.MustParsePrefix("10.32.0.1/12") {
		t.Fatalf("AllocateIP = %v, %v", a, err)
	}
	if err := c.ClaimIP(ctx, "c1", netip.MustParsePrefix("10.2.1.1/24")); err != nil {
		t.Fatal(err)
	}
	if err := c.ReleaseIP(ctx, "c1", netip.MustParseAddr("10.2.1.1")); err != nil {
		t.Fatal(err)
	}
	if err := c.Expose(ctx, netip.MustParsePrefix("10.2.0.254/16"), true); err != nil {
		t.Fatal(err)
	}
	want := []string{"POST /ip/c1/10.2.0.0/16 check-alive=true",
		"PUT /ip/c1/10.2.1.1/24 noErrorOnUnknown=true&check-alive=true",
		"DELETE /ip/c1/10.2.1.1 ", "POST /expose/10.2.0.254/16 skipNAT=true"}
	for i, w := range want {
		r := (*got)[i]
		if s := r.method + " " + r.path + " " + r.rawQuery; s != w {
			t.Errorf("request %d = %q, want %q", i, s, w)
		}
	}
}

func TestErrorsCarryServerMessage(t *testing.T) {
	for _, code := range []int{400, 404, 500, 503} {
		c, _ := fakeRouter(t, code, "peer names collision\n")
		err := c.Connect(context.Background(), []string{"x"}, false)
		if StatusCode(err) != code {
			t.Fatalf("code %d: StatusCode(%v) = %d", code, err, StatusCode(err))
		}
		if !strings.Contains(err.Error(), "peer names collision") {
			t.Errorf("code %d: message lost: %v", code, err)
		}
		if IsNotRunning(err) {
			t.Errorf("code %d: reported as not running", code)
		}
	}
}

func TestConnectionRefusedIsNotRunning(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := NewClient(Config{Addr: addr})
	_, err = c.Status(context.Background(), "")
	if !IsNotRunning(err) {
		t.Fatalf("err = %v, want NotRunningError", err)
	}
	want := "weave router is not running (no answer from http://" + addr + ")"
	if err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

func TestUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "weave.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("unreleased\n")) })}}
	srv.Start()
	t.Cleanup(srv.Close)
	c := NewClient(Config{Addr: sock})
	v, err := c.Version(context.Background())
	if err != nil || v != "unreleased" {
		t.Fatalf("Version = %q, %v", v, err)
	}
	c2 := NewClient(Config{Addr: sock + ".missing"})
	_, err = c2.Status(context.Background(), "")
	var nr *NotRunningError
	if !errors.As(err, &nr) || nr.Addr != "unix://"+sock+".missing" {
		t.Fatalf("missing socket: %v", err)
	}
}
