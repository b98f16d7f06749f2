package pidfile

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestPIDFileAcquireRelease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	p, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, Name))
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
	held, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	_, err = Acquire(dir)
	var are *AlreadyRunningError
	if !errors.As(err, &are) || are.PID != os.Getpid() {
		t.Fatalf("got %v, want AlreadyRunningError for pid %d", err, os.Getpid())
	}
	if want := "weave router already running (pid " + strconv.Itoa(os.Getpid()) + ")"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}

// TestPIDFileSimultaneousAcquire: two launches at once raced on the pid
// file ("rename ... no such file", or both running). Under the run dir's
// lock exactly one wins, and the file is complete.
func TestPIDFileSimultaneousAcquire(t *testing.T) {
	dir := t.TempDir()
	const n = 16
	var wg sync.WaitGroup
	results := make(chan error, n)
	held := make(chan *File, n)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			f, err := Acquire(dir)
			if err == nil {
				held <- f
			}
			results <- err
		})
	}
	close(start)
	wg.Wait()
	close(results)
	close(held)
	won := 0
	for err := range results {
		var are *AlreadyRunningError
		switch {
		case err == nil:
			won++
		case !errors.As(err, &are):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d simultaneous Acquires won, want exactly 1", won)
	}
	if pid, err := Read(filepath.Join(dir, Name)); err != nil || pid != os.Getpid() {
		t.Errorf("pid file: %d %v", pid, err)
	}
	for f := range held {
		f.Release()
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, ".weaver.pid.*")); len(matches) != 0 {
		t.Errorf("temporary files left: %v", matches)
	}
}

func TestPIDFileReplacesStale(t *testing.T) {
	for _, content := range []string{"99999999", "garbage", ""} {
		dir := t.TempDir()
		writePID(t, dir, content) // 99999999 exceeds pid_max: never alive
		p, err := Acquire(dir)
		if err != nil {
			t.Fatalf("stale %q: %v", content, err)
		}
		if pid, err := Read(p.Path()); err != nil || pid != os.Getpid() {
			t.Errorf("stale %q: pid file now %d", content, pid)
		}
	}
}

func TestPIDFileReleaseKeepsOthers(t *testing.T) {
	dir := t.TempDir()
	p, err := Acquire(dir)
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
	if err := os.WriteFile(filepath.Join(dir, Name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestStatState(t *testing.T) {
	proc := t.TempDir()
	for pid, stat := range map[int]string{1: "1 (init) S 0", 2: "2 (a) b) Z 1", 3: "3 (x"} {
		if err := os.MkdirAll(filepath.Join(proc, strconv.Itoa(pid)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, strconv.Itoa(pid), "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for pid, want := range map[int][2]bool{1: {true, true}, 2: {false, true}, 3: {false, false}, 4: {false, false}} {
		alive, ok := StatState(proc, pid)
		if alive != want[0] || ok != want[1] {
			t.Errorf("pid %d: alive=%v ok=%v, want %v", pid, alive, ok, want)
		}
	}
}

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), Name)
	if err := Write(path, 4242); err != nil {
		t.Fatal(err)
	}
	if pid, err := Read(path); err != nil || pid != 4242 {
		t.Fatalf("Read = %d, %v", pid, err)
	}
	if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("malformed pid file: err %v does not name %s", err, path)
	}
}
