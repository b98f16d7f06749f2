package netnstest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTopologyUnderlay checks the harness without weave: hosts reach each
// other over the underlay bridge, CutLink blocks exactly one pair, and
// RestoreLink brings it back.
func TestTopologyUnderlay(t *testing.T) {
	tp := New(t, Config{Hosts: 3})
	h1, h2, h3 := tp.Host(1), tp.Host(2), tp.Host(3)
	if h3.IP != "192.168.100.3" || !strings.HasPrefix(h1.NS, tp.Prefix+"-") {
		t.Fatalf("unexpected naming: %+v prefix %s", h3, tp.Prefix)
	}
	for _, p := range [][2]*Host{{h1, h2}, {h2, h3}, {h1, h3}} {
		if out, err := Ping(p[0].NS, p[1].IP, 1); err != nil {
			t.Fatalf("ping %s -> %s over the underlay: %v\n%s", p[0].Name, p[1].Name, err, out)
		}
	}
	tp.CutLink(h1, h3)
	if out, err := Output(h1.NS, "ping", "-n", "-c", "1", "-W", "1", h3.IP); err == nil {
		t.Fatalf("ping h1 -> h3 succeeded through a cut link:\n%s", out)
	}
	if out, err := Output(h3.NS, "ping", "-n", "-c", "1", "-W", "1", h1.IP); err == nil {
		t.Fatalf("ping h3 -> h1 succeeded through a cut link:\n%s", out)
	}
	if out, err := Ping(h1.NS, h2.IP, 1); err != nil {
		t.Fatalf("cutting h1<->h3 broke h1 -> h2: %v\n%s", err, out)
	}
	tp.RestoreLink(h1, h3)
	if out, err := Ping(h1.NS, h3.IP, 1); err != nil {
		t.Fatalf("ping h1 -> h3 after RestoreLink: %v\n%s", err, out)
	}
}

// TestCleanupRemovesNamespacesAndProcesses checks that a finished
// topology leaves no namespace and no process behind.
func TestCleanupRemovesNamespacesAndProcesses(t *testing.T) {
	RequireRoot(t)
	var names []string
	var proc *Proc
	t.Run("inner", func(t *testing.T) {
		tp := New(t, Config{Hosts: 1})
		c := tp.NewContainer(tp.Host(1), "c1", "10.2.1.1/24")
		names = []string{tp.Underlay, tp.Host(1).NS, c.NS}
		proc = tp.Start(c.NS, "sleep", "300")
	})
	for _, ns := range names {
		if _, err := os.Stat(NSPath(ns)); err == nil {
			t.Errorf("namespace %s still exists after cleanup", ns)
		}
	}
	select {
	case <-proc.Done():
	default:
		t.Errorf("background process %d still running after cleanup", proc.Cmd.Process.Pid)
	}
}

// TestSweepRemovesOrphans fakes a namespace left by a dead test process
// and checks Sweep removes it while a live creator's namespace stays.
func TestSweepRemovesOrphans(t *testing.T) {
	RequireRoot(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	orphan := fmt.Sprintf("%s-%d-h1", newPrefix(), dead.Process.Pid)
	live := fmt.Sprintf("%s-%d-h1", newPrefix(), os.Getpid())
	for _, ns := range []string{orphan, live} {
		if out, err := run("ip", "netns", "add", ns); err != nil {
			t.Fatalf("add %s: %v %s", ns, err, out)
		}
		t.Cleanup(func() { _ = deleteNS(ns) })
	}
	if err := Sweep(); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if _, err := os.Stat(NSPath(orphan)); err == nil {
		t.Errorf("orphan namespace %s survived Sweep", orphan)
	}
	if _, err := os.Stat(NSPath(live)); err != nil {
		t.Errorf("live namespace %s removed by Sweep: %v", live, err)
	}
}

func TestPollReturnsLastError(t *testing.T) {
	n := 0
	err := Poll(50*time.Millisecond, func() error { n++; return fmt.Errorf("attempt %d", n) })
	if err == nil || err.Error() != fmt.Sprintf("attempt %d", n) || n < 2 {
		t.Fatalf("Poll = %v after %d attempts; want the last attempt's error after >= 2", err, n)
	}
	if err := Poll(time.Second, func() error { return nil }); err != nil {
		t.Fatalf("Poll with a true condition = %v", err)
	}
}

// TestBackgroundCapture checks Start/WaitStderr/Stop with tcpdump on the
// underlay bridge: a patterned ping between hosts shows up in the pcap.
func TestBackgroundCapture(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "tcpdump")
	tp := New(t, Config{Hosts: 2})
	file := t.TempDir() + "/u.pcap"
	p := tp.Start(tp.Underlay, "tcpdump", "-i", "any", "--immediate-mode", "-n", "-s", "0", "-U", "-Z", "root", "-w", file, "icmp")
	if err := p.WaitStderr("listening on", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if out, err := Ping(tp.Host(1).NS, tp.Host(2).IP, 2, "-p", "5745415645"); err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	_ = p.Stop(syscall.SIGINT)
	if !strings.Contains(p.Stderr(), "packets captured") {
		t.Fatalf("tcpdump did not report its count:\n%s", p.Stderr())
	}
	data, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(data), "WEAVEWEAVE") {
		t.Fatalf("pattern not in capture (err %v, %d bytes)\n%s", err, len(data), p.Stderr())
	}
	if p.Stop(syscall.SIGINT) != p.Stop(syscall.SIGKILL) {
		t.Fatal("Stop is not idempotent")
	}
}

// TestTopologyIPv6Underlay: an IPv6-only host and a dual-stack one reach
// each other over IPv6; the IPv6-only host has no IPv4 address.
func TestTopologyIPv6Underlay(t *testing.T) {
	tp := New(t, Config{Hosts: 3, Underlay: []string{UnderlayIPv6, UnderlayDual}})
	h1, h2, h3 := tp.Host(1), tp.Host(2), tp.Host(3)
	if h1.IP != "" || h1.IP6 != "fd00:100::1" || h2.IP != "192.168.100.2" || h2.IP6 != "fd00:100::2" || h3.IP6 != "" {
		t.Fatalf("unexpected addresses: h1 %q %q, h2 %q %q, h3 %q %q", h1.IP, h1.IP6, h2.IP, h2.IP6, h3.IP, h3.IP6)
	}
	if out, err := Ping(h1.NS, h2.IP6, 1); err != nil {
		t.Fatalf("ping h1 -> h2 over the IPv6 underlay: %v\n%s", err, out)
	}
	if out, err := Output(h1.NS, "ip", "-4", "addr", "show", "dev", "eth0"); err != nil || strings.Contains(out, "inet ") {
		t.Fatalf("IPv6-only h1 has an IPv4 address (err %v):\n%s", err, out)
	}
	if out, err := Ping(h3.NS, h2.IP, 1); err != nil {
		t.Fatalf("ping h3 -> h2 over IPv4: %v\n%s", err, out)
	}
}
