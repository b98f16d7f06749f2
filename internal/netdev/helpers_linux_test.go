//go:build linux

package netdev

import (
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/internal/nlsafe"
	"github.com/vishvananda/netlink"
)

var testMAC = net.HardwareAddr{0x02, 0x42, 0xaa, 0xbb, 0xcc, 0x01}

// in runs fn inside the namespace at path and fails the test on error.
func in(t *testing.T, path string, fn func() error) {
	t.Helper()
	if err := netns.Do(path, fn); err != nil {
		t.Fatal(err)
	}
}

// hostWithBridge returns a fresh namespace holding a bridge with a unique name.
func hostWithBridge(t *testing.T, mtu int) (nsPath, bridge string) {
	t.Helper()
	_, nsPath = netnstest.NewNS(t)
	bridge = netns.RandomName("wb")
	in(t, nsPath, func() error { return EnsureBridge(BridgeConfig{Name: bridge, MAC: testMAC, MTU: mtu}) })
	return nsPath, bridge
}

// link looks a link up inside the namespace.
func link(t *testing.T, nsPath, name string) netlink.Link {
	t.Helper()
	var l netlink.Link
	in(t, nsPath, func() error {
		var err error
		l, err = netlink.LinkByName(name)
		return err
	})
	return l
}

// linkNames lists link names in the namespace.
func linkNames(t *testing.T, nsPath string) []string {
	t.Helper()
	var names []string
	in(t, nsPath, func() error {
		links, err := nlsafe.LinkList(nil)
		for _, l := range links {
			names = append(names, l.Attrs().Name)
		}
		return err
	})
	return names
}

// run executes a command inside the namespace (exec inherits the thread's namespace).
func run(t *testing.T, nsPath string, name string, args ...string) (string, error) {
	t.Helper()
	var out []byte
	var runErr error
	in(t, nsPath, func() error {
		out, runErr = exec.Command(name, args...).CombinedOutput()
		return nil
	})
	return string(out), runErr
}

// iptablesSave dumps every table of the namespace.
func iptablesSave(t *testing.T, nsPath string) string {
	t.Helper()
	out, err := run(t, nsPath, "iptables-save")
	if err != nil {
		t.Fatalf("iptables-save: %v: %s", err, out)
	}
	return out
}

// eventually polls cond until it holds or 10s pass (for state with no event).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countLines(s, line string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if l == line {
			n++
		}
	}
	return n
}
