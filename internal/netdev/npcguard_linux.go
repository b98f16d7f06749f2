//go:build linux

package netdev

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
)

// NPCGuardTable is the router's own nftables table (family inet) under
// weaver --expect-npc.
const NPCGuardTable = "weave-guard"

// EnsureNPCGuard installs (or replaces, atomically) the table that drops
// every new connection crossing the bridge unless weave-npc's table marked
// it with NPCMark. It runs after weave-npc's chain (priority filter+10), so
// with weave-npc absent, pods are closed rather than open, as 2.8.1's
// --expect-npc rules do. Replies of established connections pass.
func EnsureNPCGuard(bridge string) error {
	if bridge == "" {
		bridge = DefaultBridge
	}
	// Bridged frames reach the inet forward hook only through br_netfilter.
	if err := writeSysctl("net/bridge/bridge-nf-call-iptables", "1"); err != nil {
		return fmt.Errorf("enable br_netfilter for the NPC guard (load module br_netfilter): %w", err)
	}
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("open nftables netlink connection: %w", err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: NPCGuardTable}
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	accept := nftables.ChainPolicyAccept
	prio := nftables.ChainPriorityRef(*nftables.ChainPriorityFilter + 10)
	fwd := c.AddChain(&nftables.Chain{Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: prio, Policy: &accept})
	check := c.AddChain(&nftables.Chain{Name: "npc-check", Table: t})
	for _, key := range []expr.MetaKey{expr.MetaKeyIIFNAME, expr.MetaKeyOIFNAME} {
		c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: []expr.Any{
			&expr.Meta{Key: key, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: padIfname(bridge)},
			&expr.Verdict{Kind: expr.VerdictGoto, Chain: check.Name},
		}})
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: check, Exprs: guardRule()})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("load table inet %s: %w", NPCGuardTable, err)
	}
	return nil
}

// guardRule: ct state not established/related, mark lacks NPCMark: drop.
func guardRule() []expr.Any {
	zero := binaryutil.NativeEndian.PutUint32(0)
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED), Xor: zero},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: zero},
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: binaryutil.NativeEndian.PutUint32(NPCMark), Xor: zero},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: zero},
		&expr.Counter{},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
}

// RemoveNPCGuard deletes the guard table; a missing table is fine.
func RemoveNPCGuard() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("open nftables netlink connection: %w", err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: NPCGuardTable}
	c.AddTable(t)
	c.DelTable(t)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("delete table inet %s: %w", NPCGuardTable, err)
	}
	return nil
}

func padIfname(name string) []byte {
	b := make([]byte, 16)
	copy(b, name)
	return b
}

func writeSysctl(rel, value string) error {
	if err := os.WriteFile(filepath.Join("/proc/sys", rel), []byte(value), 0o644); err != nil {
		return fmt.Errorf("write sysctl %s: %w", rel, err)
	}
	return nil
}
