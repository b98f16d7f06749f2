//go:build linux

package netdev

import (
	"net/netip"
	"strings"
	"testing"
)

// TestNoMasqLocal: the exemptions go ahead of the exposed address's
// MASQUERADE, follow SetNoMasqLocal's set, and come back after a flush.
func TestNoMasqLocal(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	fw := NewFirewall(bridge, "")
	in(t, nsPath, func() error { return fw.Expose(netip.MustParsePrefix("10.40.0.1/12")) })
	blocks := []netip.Prefix{netip.MustParsePrefix("10.40.0.0/14"), netip.MustParsePrefix("10.47.0.0/16")}
	in(t, nsPath, func() error { return fw.SetNoMasqLocal(blocks) })
	natRules := func() []string {
		var rs []string
		for _, l := range strings.Split(iptablesSave(t, nsPath), "\n") {
			if strings.HasPrefix(l, "-A WEAVE ") {
				rs = append(rs, l)
			}
		}
		return rs
	}
	for _, b := range blocks {
		if rs := natRules(); !beforeMasq(rs, "-A WEAVE -d "+b.String()+" -j RETURN") {
			t.Errorf("no exemption for %s before the first MASQUERADE:\n%s", b, strings.Join(rs, "\n"))
		}
	}
	// A new set replaces the old one.
	in(t, nsPath, func() error { return fw.SetNoMasqLocal(blocks[1:]) })
	if rs := natRules(); indexOf(rs, "-A WEAVE -d 10.40.0.0/14 -j RETURN") >= 0 || indexOf(rs, "-A WEAVE -d 10.47.0.0/16 -j RETURN") < 0 {
		t.Errorf("after narrowing the set:\n%s", strings.Join(rs, "\n"))
	}
	// A flush of nat, then the monitor's reapply, restores it.
	if out, err := run(t, nsPath, "iptables", "-t", "nat", "-F", ChainNAT); err != nil {
		t.Fatalf("flush: %v: %s", err, out)
	}
	in(t, nsPath, fw.reapply)
	if rs := natRules(); !beforeMasq(rs, "-A WEAVE -d 10.47.0.0/16 -j RETURN") {
		t.Errorf("after a flush and reapply, no exemption before the first MASQUERADE:\n%s", strings.Join(rs, "\n"))
	}
	in(t, nsPath, func() error { return fw.SetNoMasqLocal(nil) })
	if rs := natRules(); indexOf(rs, "-A WEAVE -d 10.47.0.0/16 -j RETURN") >= 0 {
		t.Errorf("an empty set left exemptions:\n%s", strings.Join(rs, "\n"))
	}
}

// beforeMasq reports whether rule is in rs ahead of every MASQUERADE.
func beforeMasq(rs []string, rule string) bool {
	for _, r := range rs {
		if r == rule {
			return true
		}
		if strings.Contains(r, "MASQUERADE") {
			return false
		}
	}
	return false
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
