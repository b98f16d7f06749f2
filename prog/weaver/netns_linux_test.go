package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestMain lets the test binary act as weaver when re-executed inside a
// network namespace, so the integration test needs no separate build.
func TestMain(m *testing.M) {
	if os.Getenv("WEAVER_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func requireRoot(t *testing.T) {
	t.Helper()
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip")
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// unixGet does GET path on the weaver API behind a unix socket; unix
// sockets are reachable from the test's namespace.
func unixGet(sock, path string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://weaver" + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return string(b), fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(b), err
}

func unixPost(sock, path string) (int, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	defer c.CloseIdleConnections()
	resp, err := c.Post("http://weaver"+path, "application/x-www-form-urlencoded", nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// eventually polls cond until it holds or the deadline passes (there is no
// event to wait for: the mesh handshake happens in other processes).
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; last: %s", what, last)
}

type testWeaver struct {
	cmd          *exec.Cmd
	sock, runDir string
	log          *strings.Builder
}

func startWeaver(t *testing.T, ns string, i int, dir string, args ...string) *testWeaver {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := &testWeaver{
		sock:   filepath.Join(dir, fmt.Sprintf("h%d.sock", i)),
		runDir: filepath.Join(dir, fmt.Sprintf("run%d", i)),
		log:    &strings.Builder{},
	}
	base := []string{"netns", "exec", ns, exe,
		fmt.Sprintf("--name=aa:00:00:00:00:0%d", i), fmt.Sprintf("--nickname=h%d", i),
		fmt.Sprintf("--host=192.168.77.%d", i), "--password=pw", "--ipalloc-range=",
		"--http-addr=" + w.sock, "--data-dir=" + filepath.Join(dir, fmt.Sprintf("data%d", i)), "--run-dir=" + w.runDir}
	w.cmd = exec.Command("ip", append(base, args...)...)
	// Under -race, the vendored mesh library has known data races of its
	// own; do not let them change the exit code, checkRaces sorts them.
	w.cmd.Env = append(os.Environ(), "WEAVER_TEST_MAIN=1", "GORACE=exitcode=0")
	w.cmd.Stdout, w.cmd.Stderr = w.log, w.log
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			_ = w.cmd.Process.Kill()
			_ = w.cmd.Wait()
		}
		checkRaces(t, fmt.Sprintf("h%d", i), w.log.String())
		if t.Failed() {
			t.Logf("weaver h%d log:\n%s", i, w.log)
		}
	})
	return w
}

func TestTwoWeaversInNamespaces(t *testing.T) {
	requireRoot(t)
	p, ns := netnstest.Namespaces(t, "1", "2")
	ns1, ns2 := ns[0], ns[1]
	ip(t, "link", "add", p+"a", "netns", ns1, "type", "veth", "peer", "name", p+"b", "netns", ns2)
	ip(t, "-n", ns1, "addr", "add", "192.168.77.1/24", "dev", p+"a")
	ip(t, "-n", ns2, "addr", "add", "192.168.77.2/24", "dev", p+"b")
	ip(t, "-n", ns1, "link", "set", p+"a", "up")
	ip(t, "-n", ns2, "link", "set", p+"b", "up")

	dir := t.TempDir()
	w1 := startWeaver(t, ns1, 1, dir)
	w2 := startWeaver(t, ns2, 2, dir, "192.168.77.1")

	eventually(t, "an established encrypted sleeve connection", func() (bool, string) {
		s, err := unixGet(w2.sock, "/status/connections")
		return err == nil && strings.Contains(s, "established encrypted   sleeve aa:00:00:00:00:01(h1)"), s + fmt.Sprint(err)
	})
	format := url.QueryEscape("{{.Router.Name}}/{{len .Router.Peers}}")
	if s, err := unixGet(w1.sock, "/report?format="+format); err != nil || s != "aa:00:00:00:00:01/2" {
		t.Errorf("report on h1: %q %v", s, err)
	}
	if s, err := unixGet(w2.sock, "/status/targets"); err != nil || s != "192.168.77.1\n" {
		t.Errorf("targets on h2: %q %v", s, err)
	}

	if code, err := unixPost(w1.sock, "/expose/10.32.0.1/12"); err != nil || code != http.StatusNoContent {
		t.Errorf("expose: %d %v", code, err)
	}
	if out, _ := exec.Command("ip", "-n", ns1, "-4", "addr", "show", "dev", "weave").CombinedOutput(); !strings.Contains(string(out), "10.32.0.1/12") {
		t.Errorf("exposed address not on the bridge:\n%s", out)
	}

	for _, w := range []*testWeaver{w1, w2} {
		if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range []*testWeaver{w1, w2} {
		if err := w.cmd.Wait(); err != nil {
			t.Errorf("weaver h%d exit after SIGTERM: %v", i+1, err)
		}
		if _, err := os.Stat(filepath.Join(w.runDir, "weaver.pid")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("h%d pid file left behind: %v", i+1, err)
		}
		if _, err := os.Stat(w.sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("h%d API socket left behind: %v", i+1, err)
		}
	}
	// The bridge outlives weaver (weave reset removes it).
	ip(t, "-n", ns1, "link", "show", "weave")
}

// checkRaces fails the test for race reports that involve our code, and
// only logs those entirely inside github.com/weaveworks/mesh (upstream).
func checkRaces(t *testing.T, host, log string) {
	t.Helper()
	reports := strings.Split(log, "WARNING: DATA RACE")
	for _, r := range reports[1:] {
		r, _, _ = strings.Cut(r, "==================")
		// Only the access stacks count, not where goroutines were created.
		r, _, _ = strings.Cut(r, "\nGoroutine ")
		if strings.Contains(r, "github.com/seedf75a49c6/weave") {
			t.Errorf("weaver %s: data race involving our code:%s", host, r)
		} else {
			t.Logf("weaver %s: data race inside the upstream mesh library (not ours)", host)
		}
	}
}
