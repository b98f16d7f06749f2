package weaver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

func TestPIDFileAcquireRelease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	p, err := AcquirePIDFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, PIDFileName))
	if err != nil || string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Fatalf("pid file = %q, %v", b, err)
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pid file still there after Release: %v", err)
	}
	if err := p.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
}

func TestPIDFileRefusesLiveWeaver(t *testing.T) {
	dir := t.TempDir()
	other := os.Getppid() // a live process that is not us
	writePID(t, dir, strconv.Itoa(other))
	_, err := AcquirePIDFile(dir)
	var are *AlreadyRunningError
	if !errors.As(err, &are) || are.PID != other {
		t.Fatalf("got %v, want AlreadyRunningError for pid %d", err, other)
	}
	if want := "weave router already running (pid " + strconv.Itoa(other) + ")"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, PIDFileName)); string(b) != strconv.Itoa(other) {
		t.Errorf("pid file of the live weaver was touched: %q", b)
	}
}

func TestPIDFileReplacesStale(t *testing.T) {
	for _, content := range []string{"99999999", "garbage", ""} {
		dir := t.TempDir()
		writePID(t, dir, content) // 99999999 exceeds pid_max: never alive
		p, err := AcquirePIDFile(dir)
		if err != nil {
			t.Fatalf("stale %q: %v", content, err)
		}
		if pid, ok := readPID(p.Path()); !ok || pid != os.Getpid() {
			t.Errorf("stale %q: pid file now %d", content, pid)
		}
	}
}

func TestPIDFileReleaseKeepsOthers(t *testing.T) {
	dir := t.TempDir()
	p, err := AcquirePIDFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	writePID(t, dir, "12345") // another weaver took over
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Path()); err != nil {
		t.Error("Release removed a pid file that is not ours")
	}
}

func writePID(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, PIDFileName), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTargetsRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if got, err := LoadTargets(dir); err != nil || got != nil {
		t.Fatalf("missing file: %v %v", got, err)
	}
	want := []string{"192.168.100.2", "h3:6783"}
	if err := SaveTargets(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadTargets(dir)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("LoadTargets = %v, %v; want %v", got, err, want)
	}
	if err := SaveTargets(dir, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := LoadTargets(dir); len(got) != 0 {
		t.Fatalf("after forgetting all: %v", got)
	}
}

func TestServeTCPAndUnix(t *testing.T) {
	h := NewAPIHandler(APIConfig{Backend: &fakeBackend{rep: sampleReport()}})
	tcp, err := Serve("127.0.0.1:0", h, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	resp, err := http.Get("http://" + tcp.Addr() + "/report?format={{.Version}}")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "1.2.3" {
		t.Errorf("TCP /report: %q", body)
	}

	sock := filepath.Join(t.TempDir(), "weave.sock")
	unix, err := Serve(sock, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err = c.Get("http://weave/status/targets")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	c.CloseIdleConnections()
	if string(body) != "192.168.100.2\n192.168.100.3\n" {
		t.Errorf("unix /status/targets: %q", body)
	}
	unix.Close()
	unix.Close() // idempotent
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket not removed: %v", err)
	}
}
