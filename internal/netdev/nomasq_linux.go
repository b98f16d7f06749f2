//go:build linux

package netdev

import (
	"errors"
	"net/netip"
)

// noMasqRule exempts traffic to p, a block of addresses of this host's
// pods, from the nat chain's MASQUERADE: what 2.8.1's --no-masq-local did
// with ipset weaver-no-masq-local and a RETURN matching it (here one
// RETURN per block: a host owns few). A client outside the overlay
// reaching a local pod (a NodePort with externalTrafficPolicy: Local)
// then shows the pod its own address.
func noMasqRule(p netip.Prefix) iptRule {
	return iptRule{"nat", ChainNAT, []string{"-d", p.String(), "-j", "RETURN"}}
}

// SetNoMasqLocal makes blocks the set of local addresses exempt from
// masquerading (replacing the previous set), and keeps them across
// flushes (Monitor). An empty set removes every exemption.
func (f *Firewall) SetNoMasqLocal(blocks []netip.Prefix) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	want := map[netip.Prefix]bool{}
	for _, p := range blocks {
		want[p.Masked()] = true
	}
	var errs []error
	for p := range f.noMasq {
		if !want[p] {
			errs = append(errs, f.ipt.deleteRule(noMasqRule(p)))
		}
	}
	f.noMasq = want
	errs = append(errs, f.ensureLocked())
	return errors.Join(errs...)
}

// ensureNoMasqLocked adds the exemptions ahead of every MASQUERADE; f.mu held.
func (f *Firewall) ensureNoMasqLocked() error {
	for p := range f.noMasq {
		if err := f.ipt.ensureRule(noMasqRule(p), 1); err != nil {
			return err
		}
	}
	return nil
}
