package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/seedf75a49c6/weave/internal/netdev"
	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestLaunchOnLoopbackOnlyHost: a host whose only interface is loopback
// (no private address, no default route) still runs the router, with
// liveness off and a WARN saying why, instead of failing to start.
func TestLaunchOnLoopbackOnlyHost(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 1, noLaunch: []int{1}})
	h := cl.host(1)
	if out, err := netnstest.Output(h.NS, "ip", "link", "del", "eth0"); err != nil {
		t.Fatalf("remove eth0: %v\n%s", err, out)
	}
	if out, err := cl.tp.Weave(h, "launch"); err != nil {
		t.Fatalf("weave launch on a loopback-only host: %v\n%s", err, out)
	}
	netnstest.WaitFor(t, 20*time.Second, "the router answers `weave status`", func() error {
		out, err := cl.tp.Weave(h, "status")
		if err != nil || !strings.Contains(out, "Service: router") {
			return fmt.Errorf("%v\n%s", err, out)
		}
		return nil
	})
	log, err := os.ReadFile(filepath.Join(h.RunDir, "weaver.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "liveness is off") || !strings.Contains(string(log), "level=WARN") {
		t.Errorf("weaver.log has no WARN that liveness is off:\n%s", tailLines(string(log), 30))
	}
	if strings.Contains(string(log), "no private IP address found") {
		t.Errorf("weaver.log still has memberlist's failure:\n%s", tailLines(string(log), 30))
	}
}

// TestResetRemovesNPCGuard: `weave reset` deletes the router's nftables
// table inet weave-guard (--expect-npc), which `weave stop` keeps so pods
// stay closed while the router is down.
func TestResetRemovesNPCGuard(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 1, expectNPC: true})
	h := cl.host(1)
	if !nftTableExists(t, h.NS, netdev.NPCGuardTable) {
		t.Fatalf("no table inet %s after weave launch --expect-npc", netdev.NPCGuardTable)
	}
	cl.weave(1, "stop")
	if !nftTableExists(t, h.NS, netdev.NPCGuardTable) {
		t.Fatalf("weave stop removed table inet %s; it must keep pods closed", netdev.NPCGuardTable)
	}
	cl.weave(1, "reset", "--force")
	if nftTableExists(t, h.NS, netdev.NPCGuardTable) {
		t.Errorf("table inet %s is still there after weave reset", netdev.NPCGuardTable)
	}
}

// nftTableExists lists the inet tables of namespace ns.
func nftTableExists(t *testing.T, ns, name string) bool {
	t.Helper()
	found := false
	err := netns.Do(netnstest.NSPath(ns), func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
		for _, tb := range tables {
			found = found || tb.Name == name
		}
		return err
	})
	if err != nil {
		t.Fatalf("list nftables tables in %s: %v", ns, err)
	}
	return found
}
