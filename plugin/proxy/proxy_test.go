package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/seedf75a49c6/weave/internal/testutil"
)

// fakeDockerd serves the calls the tests make, on a unix socket.
type fakeDockerd struct {
	mu      sync.Mutex
	created []byte // last create body
	big     []byte
}

func (f *fakeDockerd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/containers/create"):
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.created = body
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"Id":"c1","Warnings":[]}`)
	case strings.HasSuffix(r.URL.Path, "/start"):
		w.WriteHeader(http.StatusNoContent)
	case strings.HasSuffix(r.URL.Path, "/json") && strings.Contains(r.URL.Path, "/containers/"):
		fmt.Fprint(w, `{"Id":"c1","Config":{"Entrypoint":["/w/w","sh"]},"State":{"Running":true,"Pid":4242},"NetworkSettings":{"IPAddress":"172.17.0.2","Ports":{}}}`)
	case r.URL.Path == "/big": // chunked: no Content-Length, flushed in pieces
		for i := 0; i < len(f.big); i += 10000 {
			_, _ = w.Write(f.big[i:min(i+10000, len(f.big))])
			w.(http.Flusher).Flush()
		}
	case strings.HasSuffix(r.URL.Path, "/attach"):
		// dockerd's hijack: 101, then echo what the client sends once it
		// has closed its side.
		conn, buf, _ := w.(http.Hijacker).Hijack()
		defer conn.Close()
		fmt.Fprint(buf, "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
		buf.Flush()
		in, _ := io.ReadAll(buf)
		fmt.Fprintf(conn, "echo:%s", in)
	default:
		http.NotFound(w, r)
	}
}

func serveUnix(t *testing.T, h http.Handler) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "wpx") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "d.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return path
}

func unixClient(path string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}}}
}

func startProxy(t *testing.T, mod func(*Config)) (*Proxy, *fakeDockerd, *fakeEngine, *fakeNet, *fakeDNS, string) {
	t.Helper()
	d := &fakeDockerd{big: bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16)}
	up := serveUnix(t, d)
	dir, _ := os.MkdirTemp("", "wpx")
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "weave.sock")
	p, eng, nw, names := testProxy(t, func(c *Config) {
		c.DockerAPI, c.Listen = "unix://"+up, []string{"unix://" + sock}
		if mod != nil {
			mod(c)
		}
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, d, eng, nw, names, sock
}

// TestPassThrough: a chunked 200 KiB answer arrives whole (655), a
// hijacked attach whose client closes its write side first still gets
// the answer (docker run's order), create reaches dockerd rewritten, and
// a dockerd that is away is answered in Docker's error shape.
func TestPassThrough(t *testing.T) {
	_, d, _, _, _, sock := startProxy(t, nil)
	c := unixClient(sock)
	resp, err := c.Get("http://docker/big")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(body, d.big) || resp.ContentLength != -1 {
		t.Fatalf("chunked answer: %d bytes (length %d), want %d chunked", len(body), resp.ContentLength, len(d.big))
	}

	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "POST /v1.41/containers/c1/attach?stream=1&stdin=1 HTTP/1.1\r\nHost: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
	br := bufio.NewReader(conn)
	hr, err := http.ReadResponse(br, nil)
	if err != nil || hr.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("attach: %v %v", err, hr)
	}
	fmt.Fprint(conn, "stdin data")
	conn.(*net.UnixConn).CloseWrite()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(br)
	if string(got) != "echo:stdin data" {
		t.Fatalf("hijacked stream after half-close: %q, want %q", got, "echo:stdin data")
	}

	resp, err = c.Post("http://docker/v1.41/containers/create?name=web", "application/json", strings.NewReader(`{"Image":"busybox"}`))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v %v", err, resp)
	}
	resp.Body.Close()
	d.mu.Lock()
	created := string(d.created)
	d.mu.Unlock()
	if !strings.Contains(created, `"Entrypoint":["/w/w"]`) || !strings.Contains(created, `"Hostname":"web"`) {
		t.Fatalf("dockerd got create body %s, want it rewritten", created)
	}
	// unversioned path; a WEAVE_CIDR we cannot use is refused, naming it
	resp, err = c.Post("http://docker/containers/create", "application/json", strings.NewReader(`{"Image":"busybox","Env":["WEAVE_CIDR=10.2.1.1"]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `\"10.2.1.1\" is not an IPv4 address/prefix`) {
		t.Fatalf("create with WEAVE_CIDR=10.2.1.1: %d %s", resp.StatusCode, body)
	}
}

func TestUpstreamAway(t *testing.T) {
	p, _, _, _ := testProxy(t, nil)
	dir, _ := os.MkdirTemp("", "wpx")
	defer os.RemoveAll(dir)
	p.cfg.Listen = []string{"unix://" + dir + "/p.sock"}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	resp, err := unixClient(dir + "/p.sock").Get("http://docker/v1.41/info")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var msg struct{ Message string }
	if resp.StatusCode != http.StatusBadGateway || json.Unmarshal(body, &msg) != nil || !strings.Contains(msg.Message, "/nonexistent/docker.sock") {
		t.Fatalf("dockerd away: %d %s; want 502 with a message naming the Docker API", resp.StatusCode, body)
	}
}

// TestStartAttaches: a start through the proxy attaches the container
// (addresses, ethwe, DNS, /etc/hosts) before it answers; its die event
// releases; --rewrite-inspect shows the weave address.
func TestStartAttaches(t *testing.T) {
	_, _, eng, nw, names, sock := startProxy(t, func(c *Config) { c.RewriteInspect = true })
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("172.17.0.2 c1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eng.mu.Lock()
	eng.containers["c1"] = container.InspectResponse{ID: "c1", HostsPath: hosts,
		Config:     &container.Config{Entrypoint: []string{"/w/w", "sh"}, Hostname: "web", Domainname: "weave.local", Env: []string{"WEAVE_CIDR=10.2.1.1/24 net:default"}},
		HostConfig: &container.HostConfig{ExtraHosts: []string{"db:10.9.9.9"}},
		State:      &container.State{Running: true, Pid: 4242}}
	eng.mu.Unlock()
	c := unixClient(sock)
	resp, err := c.Post("http://docker/v1.41/containers/c1/start", "", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("start: %v %v", err, resp)
	}
	resp.Body.Close()
	nw.mu.Lock()
	got := fmt.Sprint(nw.attached[4242])
	nw.mu.Unlock()
	if got != "[10.2.1.1/24 10.32.0.1/12]" {
		t.Fatalf("ethwe of c1 after start: %s", got)
	}
	names.mu.Lock()
	dnsGot := fmt.Sprint(names.entries["web.weave.local."])
	names.mu.Unlock()
	if dnsGot != "[c1 10.2.1.1 c1 10.32.0.1]" {
		t.Fatalf("DNS entries: %s", dnsGot)
	}
	data, _ := os.ReadFile(hosts)
	for _, w := range []string{"10.2.1.1\tweb.weave.local web\n", "10.32.0.1\tweb.weave.local web\n", "10.9.9.9\tdb\n", "127.0.0.1\tlocalhost\n"} {
		if !strings.Contains(string(data), w) {
			t.Fatalf("/etc/hosts:\n%s\nwant %q", data, w)
		}
	}
	resp, err = c.Get("http://docker/v1.41/containers/c1/json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"IPAddress":"10.2.1.1"`) || !strings.Contains(string(body), `"Ports":{}`) {
		t.Fatalf("inspect with --rewrite-inspect: %s", body)
	}

	eng.mu.Lock()
	ct := eng.containers["c1"]
	ct.State = &container.State{Running: false}
	eng.containers["c1"] = ct
	eng.mu.Unlock()
	eng.msgs <- events.Message{Type: events.ContainerEventType, Action: events.ActionDie, Actor: events.Actor{ID: "c1"}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		nw.mu.Lock()
		_, held := nw.held["c1"]
		nw.mu.Unlock()
		if !held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("c1's addresses not released after its die event")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestListeners (690, 670): a live socket is refused, a stale one
// replaced; TCP with --tlsverify serves only clients with a certificate
// from the CA.
func TestListeners(t *testing.T) {
	_, _, _, _, _, sock := startProxy(t, nil)
	p2, _, _, _ := testProxy(t, func(c *Config) { c.Listen = []string{"unix://" + sock} })
	if err := p2.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "served by another process") {
		t.Fatalf("second proxy on a live socket: %v", err)
	}

	stale := filepath.Join(t.TempDir(), "s.sock")
	l, _ := net.Listen("unix", stale)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	p3, _, _, _ := testProxy(t, func(c *Config) { c.Listen = []string{"unix://" + stale} })
	if err := p3.Start(context.Background()); err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	p3.Close()

	ca := testutil.NewCA(t)
	srvCert, _, _ := ca.Issue("127.0.0.1")
	cliCert, _, _ := ca.Issue("client")
	pool := ca.Pool
	lAddr := testutil.FreeLoopbackAddr(t)
	p4, _, _, _ := testProxy(t, func(c *Config) {
		c.Listen = []string{"tcp://" + lAddr}
		c.TLS = &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	})
	if err := p4.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p4.Close()
	get := func(certs []tls.Certificate) (*http.Response, error) {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
		return c.Get("https://" + lAddr + "/_ping")
	}
	if resp, err := get([]tls.Certificate{cliCert}); err != nil {
		t.Fatalf("TLS client with a certificate: %v", err)
	} else {
		resp.Body.Close() // 502: the fake Docker API is away; the TLS handshake is what counts
	}
	if _, err := get(nil); err == nil {
		t.Fatal("TLS client without a certificate was served under --tlsverify")
	}
}

// TestCatchUpAfterEventsLost: when Docker's event stream breaks (dockerd
// restarting), the proxy subscribes again and attaches the running
// proxied containers that have no ethwe, as after dockerd restarted them.
func TestCatchUpAfterEventsLost(t *testing.T) {
	eng, nw := newFakeEngine(), newFakeNet()
	errs, subscribed := make(chan error, 1), make(chan struct{}, 4)
	p, _, _, _ := testProxy(t, func(c *Config) {
		c.Engine, c.Network = &brokenEvents{fakeEngine: eng, errs: errs, subscribed: subscribed}, nw
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	<-subscribed // the first catch-up has listed the containers: none yet
	eng.mu.Lock()
	eng.containers["c9"] = container.InspectResponse{ID: "c9",
		Config: &container.Config{Entrypoint: []string{"/w/w", "sleep"}}, State: &container.State{Running: true, Pid: 9999}}
	eng.mu.Unlock()
	errs <- io.ErrUnexpectedEOF // dockerd went away; it comes back with c9 restarted
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, addrs, ok := nw.Addrs(9999); ok && len(addrs) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("c9 not attached after the event stream came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type brokenEvents struct {
	*fakeEngine
	errs       chan error
	subscribed chan struct{}
}

func (b *brokenEvents) Events(context.Context, client.EventsListOptions) client.EventsResult {
	return client.EventsResult{Messages: b.msgs, Err: b.errs}
}

func (b *brokenEvents) ContainerList(ctx context.Context, o client.ContainerListOptions) (client.ContainerListResult, error) {
	defer func() {
		select {
		case b.subscribed <- struct{}{}:
		default:
		}
	}()
	return b.fakeEngine.ContainerList(ctx, o)
}
