package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// runProc starts sh -c script as a Proc logging to log (no namespaces:
// Service's supervision is what is under test).
func runProc(t *testing.T, log, script string) (*Proc, error) {
	p := &Proc{Name: "sh", Log: log, done: make(chan struct{})}
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p.cmd = exec.Command("sh", "-c", script)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	return p, nil
}

// A service whose program exits (as kube-proxy does when its node's
// addresses change) runs again, its log appended; Stop ends it for good.
func TestServiceRestartsAProgramThatExits(t *testing.T) {
	log := filepath.Join(t.TempDir(), "svc.log")
	var runs atomic.Int32
	s, err := startService("svc", 10*time.Millisecond, func() (*Proc, error) {
		if runs.Add(1) == 1 {
			return runProc(t, log, "echo first run; exit 1")
		}
		return runProc(t, log, "echo second run; exec sleep 60")
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.Tail(5), "second run") {
		if time.Now().After(deadline) {
			t.Fatalf("not restarted: restarts %d, log %q", s.Restarts(), s.Tail(5))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.Restarts(); got != 1 {
		t.Errorf("restarts = %d, want 1", got)
	}
	if err := s.Exited(); err != nil {
		t.Errorf("Exited = %v while it runs", err)
	}
	if tail := s.Tail(5); !strings.Contains(tail, "first run\nsecond run") {
		t.Errorf("log %q: want both runs, appended", tail)
	}
	s.Stop(time.Second)
	if n := runs.Load(); n != 2 {
		t.Errorf("started %d times, want 2 (none after Stop)", n)
	}
}

// A program that exits every time is given up on, with the reason.
func TestServiceGivesUpOnAProgramThatAlwaysExits(t *testing.T) {
	log := filepath.Join(t.TempDir(), "svc.log")
	s, err := startService("svc", time.Millisecond, func() (*Proc, error) {
		return runProc(t, log, "exit 3")
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Exited() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("still restarting after %d restarts", s.Restarts())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.Exited(); !strings.Contains(err.Error(), "exit status 3") || s.Restarts() != serviceMaxRestarts+1 {
		t.Errorf("Exited = %v after %d restarts; want exit status 3 after %d", err, s.Restarts(), serviceMaxRestarts+1)
	}
	s.Stop(time.Second)
}
