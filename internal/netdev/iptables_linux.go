//go:build linux

package netdev

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Chain names, as Weave Net 2.8.1 uses them.
const (
	ChainCanary = "WEAVE-CANARY" // empty; its absence means someone flushed our rules
	ChainExpose = "WEAVE-EXPOSE" // filter: accept forwarding into exposed subnets
	ChainNAT    = "WEAVE"        // nat: masquerading for exposed subnets
)

// DefaultMonitorInterval is used when MonitorIPTables gets interval <= 0.
const DefaultMonitorInterval = 10 * time.Second

// canaryTables lists the tables that hold a canary chain.
var canaryTables = []string{"filter", "nat", "mangle"}

// iptRule is one rule: table, chain and the match/target arguments.
type iptRule struct {
	table, chain string
	args         []string
}

// chains returns every chain EnsureIPTables creates, by table.
func chains() []iptRule {
	return []iptRule{
		{table: "filter", chain: ChainCanary}, {table: "nat", chain: ChainCanary}, {table: "mangle", chain: ChainCanary},
		{table: "filter", chain: ChainExpose}, {table: "nat", chain: ChainNAT},
	}
}

// forwardRules lets bridged and container traffic pass a FORWARD DROP
// policy; they also cover bridged frames when br_netfilter is loaded
// (bridge-nf-call-iptables=1), since those arrive as -i br -o br.
func forwardRules(br string) []iptRule {
	return []iptRule{
		{"filter", "FORWARD", []string{"-i", br, "-o", br, "-j", "ACCEPT"}},
		{"filter", "FORWARD", []string{"-o", br, "-j", ChainExpose}},
		{"filter", "FORWARD", []string{"-i", br, "!", "-o", br, "-j", "ACCEPT"}},
		{"filter", "FORWARD", []string{"-o", br, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"}},
	}
}

// natJump sends POSTROUTING through our nat chain.
var natJump = iptRule{"nat", "POSTROUTING", []string{"-j", ChainNAT}}

// EnsureIPTables installs the rules that let traffic on the bridge pass on a
// host whose FORWARD policy is DROP, plus a WEAVE-CANARY chain used to
// detect flushes. Idempotent.
func EnsureIPTables(bridge string) error {
	if bridge == "" {
		bridge = DefaultBridge
	}
	iptMu.Lock()
	defer iptMu.Unlock()
	return ensureIPTablesLocked(bridge)
}

// iptMu serialises our check-then-add rule edits within the process, so
// concurrent callers (the monitor and an HTTP expose) never add a rule twice.
var iptMu sync.Mutex

func ensureIPTablesLocked(bridge string) error {
	for _, c := range chains() {
		if err := ensureChain(c.table, c.chain); err != nil {
			return err
		}
	}
	for i, r := range forwardRules(bridge) {
		if err := ensureRule(r, i+1); err != nil {
			return err
		}
	}
	return ensureRule(natJump, 0)
}

// RemoveIPTables removes every rule and chain EnsureIPTables and Expose add.
func RemoveIPTables(bridge string) error {
	if bridge == "" {
		bridge = DefaultBridge
	}
	iptMu.Lock()
	defer iptMu.Unlock()
	var errs []error
	for _, r := range append(forwardRules(bridge), natJump) {
		errs = append(errs, deleteRule(r))
	}
	for _, c := range chains() {
		errs = append(errs, deleteChain(c.table, c.chain))
	}
	return errors.Join(errs...)
}

// MonitorIPTables re-applies EnsureIPTables (and re-exposes addresses) when
// the canary chain disappears, checking every interval (default 10s), until
// ctx ends. It blocks, running iptables from the calling goroutine, so a
// caller inside netns.Do monitors that namespace.
func MonitorIPTables(ctx context.Context, bridge string, interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		interval = DefaultMonitorInterval
	}
	if v, err := readSysctl("net/bridge/bridge-nf-call-iptables"); err == nil && v == "1" {
		log.Info("br_netfilter is active; bridged frames traverse FORWARD, which our rules accept", "bridge", bridge)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if missing := missingCanaries(); len(missing) > 0 {
			log.Warn("iptables canary chain missing, re-applying rules", "bridge", bridge, "tables", missing)
			if err := reapply(bridge); err != nil {
				log.Error("re-apply iptables rules", "bridge", bridge, "err", err)
			}
		}
	}
}

// missingCanaries lists the tables whose canary chain is gone.
func missingCanaries() []string {
	var missing []string
	for _, table := range canaryTables {
		if !chainExists(table, ChainCanary) {
			missing = append(missing, table)
		}
	}
	return missing
}

// reapply restores the base rules and every exposed address of bridge.
func reapply(bridge string) error {
	iptMu.Lock()
	defer iptMu.Unlock()
	errs := []error{ensureIPTablesLocked(bridge)}
	for _, p := range exposedAddrs(bridge) {
		errs = append(errs, ensureExposeRules(bridge, p))
	}
	return errors.Join(errs...)
}

// ensureExposeRules adds the rules for one exposed address; iptMu held.
func ensureExposeRules(bridge string, addr netip.Prefix) error {
	if err := ensureIPTablesLocked(bridge); err != nil {
		return err
	}
	for i, r := range exposeRules(bridge, addr) {
		pos := 0
		if i == 0 {
			pos = 1 // multicast RETURN goes ahead of every MASQUERADE
		}
		if err := ensureRule(r, pos); err != nil {
			return err
		}
	}
	return nil
}

// removeExposeRules deletes the rules for one exposed address.
func removeExposeRules(bridge string, addr netip.Prefix) error {
	iptMu.Lock()
	defer iptMu.Unlock()
	var errs []error
	for _, r := range exposeRules(bridge, addr) {
		errs = append(errs, deleteRule(r))
	}
	return errors.Join(errs...)
}

// exposeRules masquerade traffic between the overlay subnet and the rest
// of the world, and accept forwarding into the subnet.
func exposeRules(bridge string, addr netip.Prefix) []iptRule {
	cidr := addr.Masked().String()
	return []iptRule{
		{"nat", ChainNAT, []string{"-s", cidr, "-d", "224.0.0.0/4", "-j", "RETURN"}},
		{"nat", ChainNAT, []string{"!", "-s", cidr, "-o", bridge, "-j", "MASQUERADE"}},
		{"nat", ChainNAT, []string{"-s", cidr, "!", "-o", bridge, "-j", "MASQUERADE"}},
		{"filter", ChainExpose, []string{"-d", cidr, "-j", "ACCEPT"}},
	}
}

// iptables runs the iptables binary (waiting for the xtables lock).
func iptables(args ...string) (string, error) {
	out, err := exec.Command("iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("run iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func chainExists(table, chain string) bool {
	_, err := iptables("-t", table, "-S", chain)
	return err == nil
}

func ensureChain(table, chain string) error {
	if chainExists(table, chain) {
		return nil
	}
	if _, err := iptables("-t", table, "-N", chain); err != nil && !chainExists(table, chain) {
		return fmt.Errorf("create chain %s/%s: %w", table, chain, err)
	}
	return nil
}

func deleteChain(table, chain string) error {
	if !chainExists(table, chain) {
		return nil
	}
	if _, err := iptables("-t", table, "-F", chain); err != nil {
		return fmt.Errorf("flush chain %s/%s: %w", table, chain, err)
	}
	if _, err := iptables("-t", table, "-X", chain); err != nil {
		return fmt.Errorf("delete chain %s/%s: %w", table, chain, err)
	}
	return nil
}

func ruleExists(r iptRule) bool {
	_, err := iptables(append([]string{"-t", r.table, "-C", r.chain}, r.args...)...)
	return err == nil
}

// ensureRule adds r if missing: inserted at pos (1-based), or appended if pos is 0.
func ensureRule(r iptRule, pos int) error {
	if ruleExists(r) {
		return nil
	}
	op := []string{"-t", r.table, "-A", r.chain}
	if pos > 0 {
		op = []string{"-t", r.table, "-I", r.chain, strconv.Itoa(pos)}
	}
	if _, err := iptables(append(op, r.args...)...); err != nil {
		return fmt.Errorf("add rule to %s/%s: %w", r.table, r.chain, err)
	}
	return nil
}

// deleteRule removes every copy of r; a missing rule or chain is fine.
func deleteRule(r iptRule) error {
	for range 16 {
		if !ruleExists(r) {
			return nil
		}
		if _, err := iptables(append([]string{"-t", r.table, "-D", r.chain}, r.args...)...); err != nil {
			return fmt.Errorf("delete rule from %s/%s: %w", r.table, r.chain, err)
		}
	}
	return fmt.Errorf("delete rule from %s/%s: still present after 16 deletions", r.table, r.chain)
}

// exposed tracks exposed addresses per bridge, so MonitorIPTables can
// restore their rules after a flush.
var exposed = struct {
	sync.Mutex
	addrs map[string]map[netip.Prefix]struct{}
}{addrs: map[string]map[netip.Prefix]struct{}{}}

func trackExposed(bridge string, p netip.Prefix, on bool) {
	exposed.Lock()
	defer exposed.Unlock()
	m := exposed.addrs[bridge]
	if on {
		if m == nil {
			m = map[netip.Prefix]struct{}{}
			exposed.addrs[bridge] = m
		}
		m[p] = struct{}{}
		return
	}
	delete(m, p)
	if len(m) == 0 {
		delete(exposed.addrs, bridge)
	}
}

func exposedAddrs(bridge string) []netip.Prefix {
	exposed.Lock()
	defer exposed.Unlock()
	out := make([]netip.Prefix, 0, len(exposed.addrs[bridge]))
	for p := range exposed.addrs[bridge] {
		out = append(out, p)
	}
	return out
}
