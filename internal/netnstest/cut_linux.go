package netnstest

import (
	"fmt"
	"strings"
)

// CutLink drops all underlay traffic between hosts a and b, in both
// directions, with iptables rules inside the two host namespaces; every
// other path stays up. Fails t on error.
func (tp *Topology) CutLink(a, b *Host) {
	tp.t.Helper()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	key := linkKey(a, b)
	if tp.cuts[key] {
		return
	}
	if err := cutRules("-I", a, b); err != nil {
		tp.t.Fatalf("cut link %s<->%s: %v", a.Name, b.Name, err)
	}
	tp.cuts[key] = true
}

// RestoreLink removes the rules CutLink added. Fails t on error.
func (tp *Topology) RestoreLink(a, b *Host) {
	tp.t.Helper()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	key := linkKey(a, b)
	if !tp.cuts[key] {
		return
	}
	if err := cutRules("-D", a, b); err != nil {
		tp.t.Fatalf("restore link %s<->%s: %v", a.Name, b.Name, err)
	}
	delete(tp.cuts, key)
}

func linkKey(a, b *Host) [2]int {
	return [2]int{min(a.Index, b.Index), max(a.Index, b.Index)}
}

// cutRules inserts (-I) or deletes (-D) the DROP rules on both sides.
func cutRules(op string, a, b *Host) error {
	var errs []string
	for _, p := range [][2]*Host{{a, b}, {b, a}} {
		self, other := p[0], p[1]
		for _, rule := range [][]string{
			{"INPUT", "-s", other.IP},
			{"OUTPUT", "-d", other.IP},
		} {
			args := append([]string{"iptables", "-w", op}, rule...)
			if err := Exec(self.NS, append(args, "-j", "DROP")...); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("iptables %s: %s", op, strings.Join(errs, "; "))
	}
	return nil
}
