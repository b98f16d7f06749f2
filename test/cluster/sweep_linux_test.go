package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestSweepStale: the namespaces and cgroups of a cluster whose process
// died are removed; a cluster with a live process is not touched.
func TestSweepStale(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip")
	const dead = "wkdead02"
	n := &Node{cgroupRoot: "/" + dead + "-node1"}
	for _, ns := range []string{dead + "-u", dead + "-n1"} {
		if err := run("ip", "netns", "add", ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = run("ip", "netns", "del", ns) })
	}
	if err := n.makeCgroups(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.removeCgroups)
	if err := os.Mkdir(filepath.Join(n.cgroupDirs()[0], "kubepods"), 0o755); err != nil {
		t.Fatal(err)
	}
	const live = "wkabcd01"
	if err := run("ip", "netns", "add", live+"-u"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run("ip", "netns", "del", live+"-u") })
	sleeper := exec.Command("nsenter", "--net="+nsPath(live+"-u"), "sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	SweepStale() // too young to be stale
	if _, err := os.Stat(nsPath(dead + "-u")); err != nil {
		t.Fatalf("a cluster made just now was swept")
	}
	defer func(d time.Duration) { staleAge = d }(staleAge)
	staleAge = 0
	SweepStale()
	if _, err := os.Stat(nsPath(live + "-u")); err != nil {
		t.Errorf("the namespace of a running cluster was removed")
	}
	for _, ns := range []string{dead + "-u", dead + "-n1"} {
		if _, err := os.Stat(nsPath(ns)); err == nil {
			t.Errorf("namespace %s of a dead cluster left", ns)
		}
	}
	for _, d := range n.cgroupDirs() {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s of a dead cluster left", d)
		}
	}
}
