//go:build linux

package nft

import (
	"encoding/binary"
	"fmt"

	"github.com/google/nftables"

	"github.com/seedf75a49c6/weave/npc"
)

// Blocked is a count of dropped new connections to one protocol and port.
type Blocked struct {
	Proto   npc.Proto
	Port    uint16 // 0 for protocols without ports
	Packets uint64
}

// Blocked reads the per protocol/port drop counters of the loaded table.
// They restart from zero when Apply swaps the table; Counters (in the
// controller) turns them into monotonic totals.
func (e *Enforcer) Blocked() ([]Blocked, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errClosed
	}
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: e.cfg.Table}
	set, err := e.conn.GetSetByName(t, setBlocked)
	if err != nil {
		return nil, fmt.Errorf("find set %s: %w", setBlocked, err)
	}
	elems, err := e.conn.GetSetElements(set)
	if err != nil {
		return nil, fmt.Errorf("list set %s: %w", setBlocked, err)
	}
	out := make([]Blocked, 0, len(elems))
	for _, el := range elems {
		if len(el.Key) < 6 || el.Counter == nil {
			continue
		}
		out = append(out, Blocked{Proto: npc.Proto(el.Key[0]), Port: binary.BigEndian.Uint16(el.Key[4:6]), Packets: el.Counter.Packets})
	}
	return out, nil
}
