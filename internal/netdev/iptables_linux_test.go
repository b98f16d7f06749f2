//go:build linux

package netdev

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
)

func TestFirewallEnsureRules(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	in(t, nsPath, func() error { return NewFirewall(bridge, "").Ensure() })
	in(t, nsPath, func() error { return NewFirewall(bridge, "").Ensure() }) // idempotent
	dump := iptablesSave(t, nsPath)
	want := []string{
		"-A FORWARD -i " + bridge + " -o " + bridge + " -j ACCEPT",
		"-A FORWARD -o " + bridge + " -j WEAVE-EXPOSE",
		"-A FORWARD -i " + bridge + " ! -o " + bridge + " -j ACCEPT",
		"-A FORWARD -o " + bridge + " -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
		"-A POSTROUTING -j WEAVE",
		":WEAVE - [0:0]",
		":WEAVE-EXPOSE - [0:0]",
	}
	for _, line := range want {
		if n := countLines(dump, line); n != 1 {
			t.Errorf("%q appears %d times, want once; dump:\n%s", line, n, dump)
		}
	}
	if n := countLines(dump, ":WEAVE-CANARY - [0:0]"); n != 2 {
		t.Errorf("WEAVE-CANARY in %d tables, want 2 (filter, nat)", n)
	}
	for _, table := range []string{"*mangle", "*raw"} {
		if strings.Contains(dump, table) {
			t.Errorf("Ensure created table %s, which holds none of our rules:\n%s", table, dump)
		}
	}
	in(t, nsPath, func() error { return NewFirewall(bridge, "").Remove() })
	if dump := iptablesSave(t, nsPath); strings.Contains(dump, "WEAVE") {
		t.Errorf("Firewall.Remove left WEAVE rules:\n%s", dump)
	}
}

func TestMonitorRestoresCanaryAndExposure(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	exposeAddr := netip.MustParsePrefix("10.40.0.1/16")
	fw := NewFirewall(bridge, "")
	in(t, nsPath, func() error { return fw.Expose(exposeAddr) })

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = netns.Do(nsPath, func() error {
			fw.Monitor(ctx, 50*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })

	exposeRule := "-A WEAVE -s 10.40.0.0/16 ! -o " + bridge + " -j MASQUERADE"
	if !strings.Contains(iptablesSave(t, nsPath), exposeRule) {
		t.Fatalf("Expose did not add %q", exposeRule)
	}
	// Simulate a firewall reload: flush nat and drop its canary.
	for _, args := range [][]string{{"-t", "nat", "-F"}, {"-t", "nat", "-X"}} {
		if out, err := run(t, nsPath, "iptables", args...); err != nil {
			t.Fatalf("iptables %v: %v: %s", args, err, out)
		}
	}
	eventually(t, "monitor to restore nat rules", func() bool {
		dump := iptablesSave(t, nsPath)
		return strings.Contains(dump, exposeRule) && strings.Contains(dump, "-A POSTROUTING -j WEAVE") &&
			countLines(dump, ":WEAVE-CANARY - [0:0]") == 2
	})
}

// TestExposeWithoutNAT: skipNAT exposes the address and accepts
// forwarding into its subnet, with no NAT rule, also after a reapply.
func TestExposeWithoutNAT(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	addr := netip.MustParsePrefix("10.42.0.1/16")
	fw := NewFirewall(bridge, "")
	in(t, nsPath, func() error { return fw.ExposeWithoutNAT(addr) })
	in(t, nsPath, fw.reapply)
	dump := iptablesSave(t, nsPath)
	if n := countLines(dump, "-A WEAVE-EXPOSE -d 10.42.0.0/16 -j ACCEPT"); n != 1 {
		t.Errorf("filter ACCEPT appears %d times, want once:\n%s", n, dump)
	}
	for _, l := range strings.Split(dump, "\n") {
		if strings.Contains(l, "10.42.0.0/16") && strings.HasPrefix(l, "-A WEAVE ") {
			t.Errorf("NAT rule for a skipNAT address: %q", l)
		}
	}
	if !bridgeHas(t, nsPath, bridge, addr) {
		t.Errorf("bridge lacks exposed address %s", addr)
	}
	in(t, nsPath, func() error { return fw.Hide(addr) })
	if dump := iptablesSave(t, nsPath); strings.Contains(dump, "10.42.0.0/16") {
		t.Errorf("Hide left rules:\n%s", dump)
	}
}

func TestExposeHide(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	addr := netip.MustParsePrefix("10.41.0.1/16")
	fw := NewFirewall(bridge, "")
	for range 2 { // idempotent
		in(t, nsPath, func() error { return fw.Expose(addr) })
	}
	dump := iptablesSave(t, nsPath)
	for _, line := range []string{
		"-A WEAVE -s 10.41.0.0/16 -d 224.0.0.0/4 -j RETURN",
		"-A WEAVE ! -s 10.41.0.0/16 -o " + bridge + " -j MASQUERADE",
		"-A WEAVE -s 10.41.0.0/16 ! -o " + bridge + " -j MASQUERADE",
		"-A WEAVE-EXPOSE -d 10.41.0.0/16 -j ACCEPT",
	} {
		if n := countLines(dump, line); n != 1 {
			t.Errorf("%q appears %d times, want once", line, n)
		}
	}
	if !bridgeHas(t, nsPath, bridge, addr) {
		t.Errorf("bridge lacks exposed address %s", addr)
	}
	in(t, nsPath, func() error { return fw.Hide(addr) })
	if bridgeHas(t, nsPath, bridge, addr) {
		t.Errorf("bridge still has %s after Hide", addr)
	}
	if dump := iptablesSave(t, nsPath); strings.Contains(dump, "10.41.0.0/16") {
		t.Errorf("Hide left rules:\n%s", dump)
	}
	if got := fw.exposedAddrs(); len(got) != 0 {
		t.Errorf("still tracking %v after Hide", got)
	}
}

func bridgeHas(t *testing.T, nsPath, bridge string, p netip.Prefix) bool {
	t.Helper()
	l := link(t, nsPath, bridge)
	var have []netip.Prefix
	in(t, nsPath, func() error {
		var err error
		have, err = linkPrefixes(l, 0)
		return err
	})
	return containsPrefix(have, p)
}

func TestFirewallNoTrackUDP(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	fw := NewFirewall(bridge, "")
	in(t, nsPath, func() error { return errors.Join(fw.Ensure(), fw.NoTrackUDP(6784), fw.NoTrackUDP(6784)) })
	want := []string{
		"-A PREROUTING -j WEAVE-NOTRACK",
		"-A OUTPUT -j WEAVE-NOTRACK",
		"-A WEAVE-NOTRACK -p udp -m udp --dport 6784 -j NOTRACK",
	}
	assertOnce := func(when string) {
		t.Helper()
		dump := iptablesSave(t, nsPath)
		for _, line := range want {
			if n := countLines(dump, line); n != 1 {
				t.Errorf("%s: %q appears %d times, want once; dump:\n%s", when, line, n, dump)
			}
		}
	}
	assertOnce("after NoTrackUDP")
	for _, args := range [][]string{{"-t", "raw", "-F"}, {"-t", "raw", "-X"}} {
		if out, err := run(t, nsPath, "iptables", args...); err != nil {
			t.Fatalf("iptables %v: %v: %s", args, err, out)
		}
	}
	in(t, nsPath, fw.reapply)
	assertOnce("after a flush of raw and reapply")
	in(t, nsPath, func() error { return NewFirewall(bridge, "").Remove() })
	dump := iptablesSave(t, nsPath)
	if strings.Contains(dump, "WEAVE") {
		t.Errorf("Firewall.Remove left WEAVE rules:\n%s", dump)
	}
	if v, _ := run(t, nsPath, "iptables", "--version"); strings.Contains(v, "nf_tables") && strings.Contains(dump, "*raw") {
		t.Errorf("Firewall.Remove left the raw table NoTrackUDP created:\n%s", dump)
	}
}

// TestFirewallFollowsBackend: with IPTABLES_BACKEND set, the rules land in
// that backend's tables and not in the other's, so they sit where the
// node's kube-proxy (and the NPC) put theirs.
func TestFirewallFollowsBackend(t *testing.T) {
	for _, tc := range []struct{ backend, other string }{{"legacy", "nft"}, {"nft", "legacy"}} {
		t.Run(tc.backend, func(t *testing.T) {
			t.Setenv("IPTABLES_BACKEND", tc.backend)
			nsPath, bridge := hostWithBridge(t, 0)
			in(t, nsPath, func() error { return NewFirewall(bridge, "").Ensure() })
			t.Cleanup(func() { _ = netns.Do(nsPath, func() error { return NewFirewall(bridge, "").Remove() }) })
			mine, err := run(t, nsPath, "iptables-"+tc.backend+"-save")
			if err != nil || !strings.Contains(mine, ":WEAVE-CANARY") {
				t.Fatalf("iptables-%s-save lacks WEAVE-CANARY (%v):\n%s", tc.backend, err, mine)
			}
			if other, _ := run(t, nsPath, "iptables-"+tc.other+"-save"); strings.Contains(other, "WEAVE") {
				t.Fatalf("rules leaked into the %s backend:\n%s", tc.other, other)
			}
		})
	}
}

// TestFirewallRemovesLegacyMangleCanary: a mangle canary left by an earlier
// version goes with Remove (and Ensure no longer creates one).
func TestFirewallRemovesLegacyMangleCanary(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	if out, err := run(t, nsPath, "iptables", "-t", "mangle", "-N", ChainCanary); err != nil {
		t.Fatalf("create legacy canary: %v: %s", err, out)
	}
	in(t, nsPath, func() error { return NewFirewall(bridge, "").Ensure() })
	in(t, nsPath, func() error { return NewFirewall(bridge, "").Remove() })
	if dump := iptablesSave(t, nsPath); strings.Contains(dump, "WEAVE") {
		t.Errorf("Firewall.Remove left WEAVE chains:\n%s", dump)
	}
}

// TestFirewallRemoveKeepsForeignRawRules: Remove drops the raw table only
// when nothing else is in it.
func TestFirewallRemoveKeepsForeignRawRules(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	fw := NewFirewall(bridge, "")
	in(t, nsPath, func() error { return errors.Join(fw.Ensure(), fw.NoTrackUDP(6784)) })
	foreign := []string{"-t", "raw", "-A", "PREROUTING", "-p", "udp", "--dport", "9999", "-j", "NOTRACK"}
	if out, err := run(t, nsPath, "iptables", foreign...); err != nil {
		t.Fatalf("add foreign rule: %v: %s", err, out)
	}
	in(t, nsPath, func() error { return NewFirewall(bridge, "").Remove() })
	dump := iptablesSave(t, nsPath)
	if strings.Contains(dump, "WEAVE") || countLines(dump, "-A PREROUTING -p udp -m udp --dport 9999 -j NOTRACK") != 1 {
		t.Errorf("Remove must take ours and keep the foreign raw rule:\n%s", dump)
	}
}
