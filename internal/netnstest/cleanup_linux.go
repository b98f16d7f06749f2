package netnstest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cleanup stops routers and background processes, dumps router logs when
// the test failed, and deletes every namespace of the topology.
func (tp *Topology) cleanup() {
	if tp.t.Failed() {
		tp.dumpDiagnostics()
	}
	tp.mu.Lock()
	procs, namespaces := tp.procs, slices.Clone(tp.namespaces)
	tp.mu.Unlock()
	for _, p := range procs {
		_ = p.Stop(syscall.SIGKILL)
	}
	for _, h := range tp.hosts {
		tp.stopRouter(h)
	}
	slices.Reverse(namespaces) // containers, then hosts, then the underlay
	for _, ns := range namespaces {
		if err := deleteNS(ns); err != nil {
			tp.t.Errorf("cleanup: %v", err)
		}
	}
}

// stopRouter asks the router to stop, then kills whatever pid files in the
// run directory still name a live process.
func (tp *Topology) stopRouter(h *Host) {
	if _, err := os.Stat(tp.cfg.Weave); err == nil {
		_, _ = outputEnvTimeout(15*time.Second, h.NS, tp.WeaveEnv(h), "sh", tp.cfg.Weave, "stop")
	}
	files, _ := filepath.Glob(filepath.Join(h.RunDir, "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			killAndReap(pid)
		}
	}
}

// killAndReap SIGKILLs pid and waits (bounded) until it is gone.
func killAndReap(pid int) {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return
	}
	_ = Poll(5*time.Second, func() error {
		if PidAlive(pid) {
			return fmt.Errorf("pid %d still alive", pid)
		}
		return nil
	})
}

// PidAlive reports whether a process with that pid exists (zombies count
// as gone).
func PidAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// deleteNS kills every process still inside ns, then deletes it. A
// namespace that is already gone is not an error.
func deleteNS(ns string) error {
	if _, err := os.Stat(NSPath(ns)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if list, err := Pids(ns); err == nil {
		for _, pid := range list {
			if pid != os.Getpid() {
				killAndReap(pid)
			}
		}
	}
	if out, err := run("ip", "netns", "del", ns); err != nil {
		return fmt.Errorf("delete namespace %s: %w: %s", ns, err, out)
	}
	return nil
}

// Pids returns the sorted PIDs of the processes inside namespace ns.
func Pids(ns string) ([]int, error) {
	out, err := run("ip", "netns", "pids", ns)
	if err != nil {
		return nil, fmt.Errorf("list processes in %s: %w: %s", ns, err, out)
	}
	var list []int
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil {
			list = append(list, pid)
		}
	}
	slices.Sort(list)
	return list, nil
}

// nsPattern matches namespace names made by this package and captures the
// creator PID.
var nsPattern = regexp.MustCompile(`^w[0-9a-f]{5}-([0-9]+)-[a-z0-9]+$`)

// Sweep deletes namespaces left behind by test processes that died
// without cleaning up (their embedded creator PID is no longer running).
func Sweep() error {
	entries, err := os.ReadDir("/var/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	var errs []error
	for _, e := range entries {
		m := nsPattern.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if pid, _ := strconv.Atoi(m[1]); PidAlive(pid) {
			continue
		}
		errs = append(errs, deleteNS(e.Name()))
	}
	return errors.Join(errs...)
}

// dumpDiagnostics logs router status and log tails for a failed test.
func (tp *Topology) dumpDiagnostics() {
	for _, h := range tp.hosts {
		if out, err := tp.Weave(h, "status", "connections"); err == nil {
			tp.t.Logf("%s `weave status connections`:\n%s", h.Name, out)
		}
		logs, _ := filepath.Glob(filepath.Join(h.RunDir, "*.log"))
		for _, l := range logs {
			b, err := os.ReadFile(l)
			if err != nil {
				continue
			}
			tp.t.Logf("%s %s (last 40 lines):\n%s", h.Name, filepath.Base(l), Tail(string(b), 40))
		}
	}
}

// ModuleRoot walks up from the working directory to the directory holding
// go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("get working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find module root: no go.mod above working directory")
		}
		dir = parent
	}
}
