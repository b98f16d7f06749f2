//go:build linux

package netdev

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/nftables"
	xtables "github.com/seedf75a49c6/weave/internal/iptables"
)

// Chain names, as Weave Net 2.8.1 uses them.
const (
	ChainCanary = "WEAVE-CANARY" // empty; its absence means someone flushed our rules
	ChainExpose = "WEAVE-EXPOSE" // filter: accept forwarding into exposed subnets
	ChainNAT    = "WEAVE"        // nat: masquerading for exposed subnets
	// ChainNoTrack (raw) exempts the fast path's encapsulated UDP from
	// conntrack: the kernel VXLAN flow needs no state, and tracking it costs
	// every packet a conntrack lookup (docs/performance.md).
	ChainNoTrack = "WEAVE-NOTRACK"
)

// DefaultMonitorInterval is used when Firewall.Monitor gets interval <= 0.
const DefaultMonitorInterval = 10 * time.Second

// canaryTables lists the tables that hold a canary chain: those that hold
// our rules. No table is created that we put nothing in: with iptables-nft
// every table registers its hooks, which then run for every packet
// (bridged frames too, through br_netfilter).
var canaryTables = []string{"filter", "nat"}

// legacyChains are chains earlier versions created that Remove still
// deletes (a mangle canary, which made the mangle table exist for nothing).
var legacyChains = []iptRule{{table: "mangle", chain: ChainCanary}}

// iptRule is one rule: table, chain and the match/target arguments.
type iptRule struct {
	table, chain string
	args         []string
}

// chains returns every chain Firewall.Ensure creates, by table. The raw
// table's ChainNoTrack comes only with NoTrackUDP (see noTrackChain).
func chains() []iptRule {
	return []iptRule{
		{table: "filter", chain: ChainCanary}, {table: "nat", chain: ChainCanary},
		{table: "filter", chain: ChainExpose}, {table: "nat", chain: ChainNAT},
	}
}

// noTrackChain is the raw-table chain of NoTrackUDP's rules.
var noTrackChain = iptRule{table: "raw", chain: ChainNoTrack}

// noTrackJumps send locally received and sent packets through ChainNoTrack.
var noTrackJumps = []iptRule{
	{"raw", "PREROUTING", []string{"-j", ChainNoTrack}},
	{"raw", "OUTPUT", []string{"-j", ChainNoTrack}},
}

// noTrackRules exempt UDP to port (the VXLAN flow: every encapsulated
// packet, either way, is addressed to it) from conntrack.
func noTrackRules(port int) []iptRule {
	return []iptRule{{"raw", ChainNoTrack, []string{"-p", "udp", "--dport", strconv.Itoa(port), "-j", "NOTRACK"}}}
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

// Firewall owns weave's iptables rules for one bridge: the FORWARD rules
// that let bridged traffic pass a DROP policy, the canary chains that
// reveal a flush, and the rules of the addresses exposed on the bridge. It
// serialises its own check-then-add edits (the monitor and an HTTP expose
// never add a rule twice) and remembers what it exposed, so Monitor can
// restore it. The daemon owns one; a CLI verb makes a short-lived one.
type Firewall struct {
	bridge string
	ipt    iptablesCmd

	mu      sync.Mutex
	exposed map[netip.Prefix]bool // exposed address -> without NAT (skipNAT)
	noTrack []int                 // UDP ports exempted from conntrack
	noMasq  map[netip.Prefix]bool // local pods' blocks kept from MASQUERADE (SetNoMasqLocal)
}

// NewFirewall returns the firewall of bridge ("" = DefaultBridge), run
// with the iptables binary bin ("iptables-legacy" or "iptables-nft" pin a
// backend; "" = the backend $IPTABLES_BACKEND names, see package
// internal/iptables, else plain "iptables"). Programs validate
// IPTABLES_BACKEND at start-up (iptables.FromEnv); an invalid value here
// falls back to plain "iptables".
func NewFirewall(bridge, bin string) *Firewall {
	if bridge == "" {
		bridge = DefaultBridge
	}
	if bin == "" {
		bin, _ = xtables.Binary("iptables")
	}
	if bin == "" {
		bin = "iptables"
	}
	return &Firewall{bridge: bridge, ipt: iptablesCmd(bin), exposed: map[netip.Prefix]bool{}}
}

// Ensure installs the forward rules and the canary chains. Idempotent.
func (f *Firewall) Ensure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ensureLocked()
}

func (f *Firewall) ensureLocked() error {
	for _, c := range chains() {
		if err := f.ipt.ensureChain(c.table, c.chain); err != nil {
			return err
		}
	}
	for i, r := range forwardRules(f.bridge) {
		if err := f.ipt.ensureRule(r, i+1); err != nil {
			return err
		}
	}
	if err := f.ipt.ensureRule(natJump, 0); err != nil {
		return err
	}
	if err := f.ensureNoMasqLocked(); err != nil {
		return err
	}
	if len(f.noTrack) == 0 {
		return nil // no raw table unless something needs it
	}
	if err := f.ipt.ensureChain(noTrackChain.table, noTrackChain.chain); err != nil {
		return err
	}
	for _, r := range noTrackJumps {
		if err := f.ipt.ensureRule(r, 0); err != nil {
			return err
		}
	}
	for _, port := range f.noTrack {
		for _, r := range noTrackRules(port) {
			if err := f.ipt.ensureRule(r, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// NoTrackUDP exempts UDP to port from conntrack in the raw
// table, and keeps it exempt across flushes. Idempotent.
func (f *Firewall) NoTrackUDP(port int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.noTrack, port) {
		f.noTrack = append(f.noTrack, port)
	}
	return f.ensureLocked()
}

// Remove removes every rule and chain Ensure and Expose add.
func (f *Firewall) Remove() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, r := range append(append(forwardRules(f.bridge), natJump), noTrackJumps...) {
		errs = append(errs, f.ipt.deleteRule(r))
	}
	for _, c := range append(append(chains(), noTrackChain), legacyChains...) {
		errs = append(errs, f.ipt.deleteChain(c.table, c.chain))
	}
	errs = append(errs, f.ipt.dropEmptyTable(noTrackChain.table))
	return errors.Join(errs...)
}

// dropEmptyTable deletes table if it is empty (nothing but built-in
// chains with ACCEPT policies and no rules) on the nf_tables backend,
// where iptables leaves a table behind once its last rule is gone: the
// raw table, which NoTrackUDP may have created, otherwise outlives a
// reset. An empty table has no effect but its hooks' cost, and whoever
// adds a rule to it again gets it back. Legacy tables are the kernel
// module's and stay; so does a table with anything in it. It reads and
// deletes the table over netlink (google/nftables, as the npc guard does).
func (ipt iptablesCmd) dropEmptyTable(table string) error {
	if v, err := ipt.run("--version"); err != nil || !strings.Contains(v, "nf_tables") {
		return nil
	}
	c, err := nftables.New()
	if err != nil {
		return nil // cannot look; an empty table is harmless
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: table}
	if tables, err := c.ListTablesOfFamily(t.Family); err != nil ||
		!slices.ContainsFunc(tables, func(x *nftables.Table) bool { return x.Name == table }) {
		return nil
	}
	chains, err := c.ListChainsOfTableFamily(t.Family)
	if err != nil {
		return nil
	}
	for _, ch := range chains {
		if ch.Table.Name != table {
			continue
		}
		if ch.Hooknum == nil || ch.Policy == nil || *ch.Policy != nftables.ChainPolicyAccept {
			return nil // a chain of someone else's, or a policy that is not ACCEPT
		}
		if rules, err := c.GetRules(t, ch); err != nil || len(rules) > 0 {
			return nil
		}
	}
	c.DelTable(t)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("delete empty table ip %s: %w", table, err)
	}
	return nil
}

// Monitor re-applies the rules (and re-exposes addresses) when a canary
// chain disappears, checking every interval (default 10s), until ctx
// ends. It blocks, running iptables from the calling goroutine, so a
// caller inside netns.Do monitors that namespace.
func (f *Firewall) Monitor(ctx context.Context, interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		interval = DefaultMonitorInterval
	}
	if v, err := readSysctl("net/bridge/bridge-nf-call-iptables"); err == nil && v == "1" {
		log.Info("br_netfilter is active; bridged frames traverse FORWARD, which our rules accept", "bridge", f.bridge)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if missing := f.missingCanaries(); len(missing) > 0 {
			log.Warn("iptables canary chain missing, re-applying rules", "bridge", f.bridge, "tables", missing)
			if err := f.reapply(); err != nil {
				log.Error("re-apply iptables rules", "bridge", f.bridge, "err", err)
			}
		}
	}
}

// missingCanaries lists the tables whose canary chain is gone.
func (f *Firewall) missingCanaries() []string {
	var missing []string
	for _, table := range canaryTables {
		if !f.ipt.chainExists(table, ChainCanary) {
			missing = append(missing, table)
		}
	}
	return missing
}

// reapply restores the base rules and every exposed address.
func (f *Firewall) reapply() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	errs := []error{f.ensureLocked()}
	for p, skipNAT := range f.exposed {
		errs = append(errs, f.ensureExposeLocked(p, skipNAT))
	}
	return errors.Join(errs...)
}

// ensureExposeLocked adds the rules for one exposed address; f.mu held.
// With skipNAT only the filter rule is added (weave expose
// --without-masquerade): traffic from the address keeps its source.
func (f *Firewall) ensureExposeLocked(addr netip.Prefix, skipNAT bool) error {
	if err := f.ensureLocked(); err != nil {
		return err
	}
	for i, r := range exposeRules(f.bridge, addr) {
		if skipNAT && r.table == "nat" {
			continue
		}
		pos := 0
		if i == 0 {
			pos = 1 // multicast RETURN goes ahead of every MASQUERADE
		}
		if err := f.ipt.ensureRule(r, pos); err != nil {
			return err
		}
	}
	f.exposed[addr] = skipNAT
	return nil
}

// removeExpose deletes the rules for one exposed address and forgets it.
func (f *Firewall) removeExpose(addr netip.Prefix) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.exposed, addr)
	var errs []error
	for _, r := range exposeRules(f.bridge, addr) {
		errs = append(errs, f.ipt.deleteRule(r))
	}
	return errors.Join(errs...)
}

// exposedAddrs lists the addresses f has exposed.
func (f *Firewall) exposedAddrs() []netip.Prefix {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]netip.Prefix, 0, len(f.exposed))
	for p := range f.exposed {
		out = append(out, p)
	}
	return out
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

// iptablesCmd is the iptables binary that edits the rules.
type iptablesCmd string

// run runs the iptables binary (waiting for the xtables lock).
func (ipt iptablesCmd) run(args ...string) (string, error) {
	out, err := exec.Command(string(ipt), append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("run %s %s: %w: %s", ipt, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func (ipt iptablesCmd) chainExists(table, chain string) bool {
	_, err := ipt.run("-t", table, "-S", chain)
	return err == nil
}

func (ipt iptablesCmd) ensureChain(table, chain string) error {
	if ipt.chainExists(table, chain) {
		return nil
	}
	if _, err := ipt.run("-t", table, "-N", chain); err != nil && !ipt.chainExists(table, chain) {
		return fmt.Errorf("create chain %s/%s: %w", table, chain, err)
	}
	return nil
}

func (ipt iptablesCmd) deleteChain(table, chain string) error {
	if !ipt.chainExists(table, chain) {
		return nil
	}
	if _, err := ipt.run("-t", table, "-F", chain); err != nil {
		return fmt.Errorf("flush chain %s/%s: %w", table, chain, err)
	}
	if _, err := ipt.run("-t", table, "-X", chain); err != nil {
		return fmt.Errorf("delete chain %s/%s: %w", table, chain, err)
	}
	return nil
}

func (ipt iptablesCmd) ruleExists(r iptRule) bool {
	_, err := ipt.run(append([]string{"-t", r.table, "-C", r.chain}, r.args...)...)
	return err == nil
}

// ensureRule adds r if missing: inserted at pos (1-based), or appended if pos is 0.
func (ipt iptablesCmd) ensureRule(r iptRule, pos int) error {
	if ipt.ruleExists(r) {
		return nil
	}
	op := []string{"-t", r.table, "-A", r.chain}
	if pos > 0 {
		op = []string{"-t", r.table, "-I", r.chain, strconv.Itoa(pos)}
	}
	if _, err := ipt.run(append(op, r.args...)...); err != nil {
		return fmt.Errorf("add rule to %s/%s: %w", r.table, r.chain, err)
	}
	return nil
}

// deleteRule removes every copy of r; a missing rule or chain is fine.
func (ipt iptablesCmd) deleteRule(r iptRule) error {
	for range 16 {
		if !ipt.ruleExists(r) {
			return nil
		}
		if _, err := ipt.run(append([]string{"-t", r.table, "-D", r.chain}, r.args...)...); err != nil {
			return fmt.Errorf("delete rule from %s/%s: %w", r.table, r.chain, err)
		}
	}
	return fmt.Errorf("delete rule from %s/%s: still present after 16 deletions", r.table, r.chain)
}
