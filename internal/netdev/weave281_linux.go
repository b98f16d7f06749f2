//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
)

// What Weave Net 2.8.1 leaves on a host that our router takes over in
// place. The bridge itself, its capture pair (bridge type "bridge": the
// same vethwe-bridge/vethwe-pcap as ours) and the containers' veths stay
// as they are; EnsureBridge replaces the pair of type "bridged_fastdp"
// (vethwe-bridge/vethwe-datapath) with ours.
const (
	// Weave281NPCPrefix starts every chain 2.8.1's weave-npc made in the
	// filter table (WEAVE-NPC, -DEFAULT, -INGRESS, -EGRESS*); ours
	// enforces policies in nftables instead.
	Weave281NPCPrefix = "WEAVE-NPC"
	// weave281NFLOGGroup is where 2.8.1 logged connections it dropped.
	weave281NFLOGGroup = "86"
	// Weave281VXLANPort is the ODP vport 2.8.1's fast path made for VXLAN
	// (named after its UDP port); it holds the port ours needs.
	Weave281VXLANPort = "vxlan-6784"
	// Weave281Datapath is 2.8.1's ODP datapath device.
	Weave281Datapath = "datapath"
)

// AdoptWeave281Host removes what Weave Net 2.8.1 left that our router does
// not use, once our own rules are in (Firewall.Ensure, and the NPC guard
// under --expect-npc): Ensure inserts our ACCEPT rules for the bridge
// ahead of 2.8.1's, so established traffic is never dropped while 2.8.1's
// policy hooks (FORWARD/INPUT jumps to WEAVE-NPC*, the NFLOG and DROP of
// new bridged connections), its WEAVE-NPC* chains and its mangle canary
// go. The fast path's VXLAN vport is deleted so our VXLAN can bind UDP
// 6784. It returns what it removed; nothing is an error when absent.
func (f *Firewall) AdoptWeave281Host() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var removed []string
	var errs []error
	for _, chain := range []string{"FORWARD", "INPUT", "OUTPUT"} {
		rules, err := f.ipt.listRules("filter", chain)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range rules {
			if !weave281Hook(r, f.bridge) {
				continue
			}
			if err := f.ipt.deleteRule(r); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, "filter "+chain+" "+strings.Join(r.args, " "))
		}
	}
	npc, err := f.ipt.chainsWithPrefix("filter", Weave281NPCPrefix)
	errs = append(errs, err)
	for _, c := range npc { // flush all first: they jump to each other
		if _, err := f.ipt.run("-t", "filter", "-F", c); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range npc {
		if err := f.ipt.deleteChain("filter", c); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "chain filter "+c)
	}
	if f.ipt.chainExists("mangle", ChainCanary) {
		if err := f.ipt.deleteChain("mangle", ChainCanary); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, "chain mangle "+ChainCanary)
			errs = append(errs, f.ipt.dropEmptyTable("mangle"))
		}
	}
	if l, err := netlink.LinkByName(Weave281VXLANPort); err == nil && l.Type() == "vxlan" {
		if err := netlink.LinkDel(l); err != nil {
			errs = append(errs, fmt.Errorf("delete 2.8.1's VXLAN vport %s: %w", Weave281VXLANPort, err))
		} else {
			removed = append(removed, "link "+Weave281VXLANPort)
		}
	}
	return removed, errors.Join(errs...)
}

// weave281Hook reports whether r is one of 2.8.1's policy hooks: a jump to
// a WEAVE-NPC* chain, or the NFLOG or DROP of traffic into the bridge.
func weave281Hook(r iptRule, bridge string) bool {
	a := r.args
	if i := slices.Index(a, "-j"); i >= 0 && i+1 < len(a) && strings.HasPrefix(a[i+1], Weave281NPCPrefix) {
		return true
	}
	o := slices.Index(a, "-o")
	if o < 0 || o+1 >= len(a) || a[o+1] != bridge || (o > 0 && a[o-1] == "!") {
		return false
	}
	target := ""
	if i := slices.Index(a, "-j"); i >= 0 && i+1 < len(a) {
		target = a[i+1]
	}
	switch target {
	case "NFLOG":
		i := slices.Index(a, "--nflog-group")
		return i >= 0 && i+1 < len(a) && a[i+1] == weave281NFLOGGroup
	case "DROP":
		return len(a) == 4 // exactly -o <bridge> -j DROP
	}
	return false
}

// Weave281DatapathPresent reports whether 2.8.1's ODP datapath device is still
// there (a kernel with openvswitch; rtnetlink cannot delete it).
func Weave281DatapathPresent() bool {
	l, err := netlink.LinkByName(Weave281Datapath)
	return err == nil && l.Type() == "openvswitch"
}

// listRules returns the rules of table/chain as `iptables -S` prints them.
func (ipt iptablesCmd) listRules(table, chain string) ([]iptRule, error) {
	out, err := ipt.run("-t", table, "-S", chain)
	if err != nil {
		return nil, err
	}
	var rules []iptRule
	for _, line := range strings.Split(out, "\n") {
		f := splitRule(line)
		if len(f) < 3 || f[0] != "-A" || f[1] != chain {
			continue
		}
		rules = append(rules, iptRule{table: table, chain: chain, args: f[2:]})
	}
	return rules, nil
}

// chainsWithPrefix lists the user chains of table whose name starts so.
func (ipt iptablesCmd) chainsWithPrefix(table, prefix string) ([]string, error) {
	out, err := ipt.run("-t", table, "-S")
	if err != nil {
		return nil, err
	}
	var chains []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "-N" && strings.HasPrefix(f[1], prefix) {
			chains = append(chains, f[1])
		}
	}
	return chains, nil
}

// splitRule splits an `iptables -S` line into arguments; double quotes
// (comments) group words and are removed, a backslash escapes the next
// character (iptables prints a comment's ' as \').
func splitRule(line string) []string {
	var out []string
	var cur strings.Builder
	quoted, have, escaped := false, false, false
	for _, c := range line {
		switch {
		case escaped:
			cur.WriteRune(c)
			escaped = false
		case c == '\\':
			escaped, have = true, true
		case c == '"':
			quoted, have = !quoted, true
		case c == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(c)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}
