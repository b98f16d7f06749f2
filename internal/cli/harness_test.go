package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeKernel records calls and keeps per-namespace interface state.
type fakeKernel struct {
	mu       sync.Mutex
	calls    []string
	ifaces   map[string][]netip.Prefix // netns -> addrs on ethwe
	bridgeOK bool
	failWith error
}

var _ Kernel = (*fakeKernel)(nil)

var (
	fakeMAC       = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	fakeBridgeMAC = net.HardwareAddr{0x8a, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e}
)

func (k *fakeKernel) log(format string, a ...any) {
	k.calls = append(k.calls, fmt.Sprintf(format, a...))
}

func (k *fakeKernel) AttachContainer(r AttachRequest) (net.HardwareAddr, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.log("attach bridge=%s netns=%s id=%s if=%s addrs=%s nomcast=%v", r.Bridge, r.NetNS, r.ContainerID,
		r.IfName, cidrs(r.Addrs), r.NoMulticastRoute)
	if k.failWith != nil {
		return nil, k.failWith
	}
	k.ifaces[r.NetNS] = append(k.ifaces[r.NetNS], r.Addrs...)
	return fakeMAC, nil
}

func (k *fakeKernel) DetachContainer(ns, ifName string, addrs []netip.Prefix) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.log("detach netns=%s if=%s addrs=%s", ns, ifName, cidrs(addrs))
	if addrs == nil {
		delete(k.ifaces, ns)
		return nil
	}
	var keep []netip.Prefix
	for _, h := range k.ifaces[ns] {
		if !containsPrefix(addrs, h) {
			keep = append(keep, h)
		}
	}
	if len(keep) == 0 {
		delete(k.ifaces, ns)
	} else {
		k.ifaces[ns] = keep
	}
	return nil
}

func containsPrefix(list []netip.Prefix, p netip.Prefix) bool {
	for _, x := range list {
		if x == p {
			return true
		}
	}
	return false
}

func (k *fakeKernel) ContainerAddrs(ns, _ string) (net.HardwareAddr, []netip.Prefix, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	a, ok := k.ifaces[ns]
	return fakeMAC, a, ok, nil
}

func (k *fakeKernel) MeshAddrs(ns string) (net.HardwareAddr, []netip.Prefix, bool, error) {
	return k.ContainerAddrs(ns, ContainerIf)
}

func (k *fakeKernel) DestroyBridge(name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.log("destroy-bridge %s", name)
	return k.failWith
}

func (k *fakeKernel) RemoveIPTables(b string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.log("remove-iptables %s", b)
	return k.failWith
}

func (k *fakeKernel) Hide(b string, a netip.Prefix) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.log("hide %s %s", b, a)
	return k.failWith
}

func (k *fakeKernel) BridgeAddrs(string) (net.HardwareAddr, []netip.Prefix, bool, error) {
	if !k.bridgeOK {
		return nil, nil, false, nil
	}
	return fakeBridgeMAC, []netip.Prefix{netip.MustParsePrefix("10.2.0.254/16")}, true, nil
}

// fakeRouter is an httptest weaver API with scripted answers.
type fakeRouter struct {
	mu       sync.Mutex
	requests []string // "METHOD path?query form"
	answers  map[string]answer
	srv      *httptest.Server
}

type answer struct {
	code int
	body string
}

func (f *fakeRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	key := r.Method + " " + r.URL.Path
	f.mu.Lock()
	rec := key
	if r.URL.RawQuery != "" {
		rec += "?" + r.URL.RawQuery
	}
	if len(r.PostForm) > 0 {
		rec += " " + r.PostForm.Encode()
	}
	f.requests = append(f.requests, rec)
	a, ok := f.answers[key]
	f.mu.Unlock()
	if !ok {
		a = answer{404, "404 page not found"}
	}
	w.WriteHeader(a.code)
	_, _ = io.WriteString(w, a.body)
}

func (f *fakeRouter) set(key string, code int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[key] = answer{code, body}
}

func (f *fakeRouter) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// harness runs CLI commands with temp dirs, a fake kernel and optionally
// a fake router.
type harness struct {
	t      *testing.T
	cfg    Config
	kernel *fakeKernel
	router *fakeRouter
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, kernel: &fakeKernel{ifaces: map[string][]netip.Prefix{}}}
	h.cfg = Config{
		DataDir: filepath.Join(dir, "data"), RunDir: filepath.Join(dir, "run"),
		NetnsDir: filepath.Join(dir, "netns"), DockerSocket: filepath.Join(dir, "docker.sock"),
		HTTPAddr:      deadAddr(t),
		LaunchTimeout: 20 * time.Second, StopTimeout: 5 * time.Second, PollInterval: 20 * time.Millisecond,
		Kernel: h.kernel,
	}
	for _, d := range []string{h.cfg.DataDir, h.cfg.RunDir, h.cfg.NetnsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// withRouter starts a fake router and points the CLI at it.
func (h *harness) withRouter() *fakeRouter {
	f := &fakeRouter{answers: map[string]answer{}}
	f.srv = httptest.NewServer(f)
	h.t.Cleanup(f.srv.Close)
	h.cfg.HTTPAddr = strings.TrimPrefix(f.srv.URL, "http://")
	h.router = f
	return f
}

// netns creates a fake named namespace file and returns its path.
func (h *harness) netns(name string) string {
	p := filepath.Join(h.cfg.NetnsDir, name)
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// run executes one command line and returns exit code, stdout, stderr.
func (h *harness) run(args ...string) (int, string, string) {
	h.t.Helper()
	var out, errb bytes.Buffer
	cfg := h.cfg
	cfg.Stdout, cfg.Stderr = &out, &errb
	cfg.Logger = slog.New(slog.NewTextHandler(&errb, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := Run(ctx, cfg, args)
	return code, out.String(), errb.String()
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func (k *fakeKernel) AttachBridge(weave, other string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.log("attach-bridge %s %s", weave, other)
	return k.failWith
}
