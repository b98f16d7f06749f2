package daemon

import (
	"context"
	"net/netip"
	"slices"
	"time"

	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/ipam/address"
)

type ipamEntry = ipam.EntryStatus

// noMasqLocalCheck is how often --no-masq-local compares the ring's
// ranges of this peer with the exemptions installed.
const noMasqLocalCheck = 2 * time.Second

// runNoMasqLocal keeps traffic to this peer's own address ranges (its
// pods) from being masqueraded (--no-masq-local, as 2.8.1's tracker kept
// ipset weaver-no-masq-local): the ranges change on donations and
// reclaims, so they are re-read from the ring.
func (d *daemon) runNoMasqLocal(ctx context.Context, b *backend) {
	if !d.cfg.NoMasqLocal || b.ipam == nil || d.firewall == nil {
		return
	}
	us := b.mesh.Ourself.Name.String()
	universe := b.ipam.Universe().Range()
	var last []netip.Prefix
	synced := false
	sync := func(time.Time) {
		blocks := ownedBlocks(b.ipam.Status().Entries, us, universe)
		if synced && slices.Equal(blocks, last) {
			return
		}
		if err := d.firewall.SetNoMasqLocal(blocks); err != nil {
			d.log.Error("--no-masq-local: update the exemptions", "err", err)
			return
		}
		last, synced = blocks, true
		d.log.Info("--no-masq-local: traffic to local addresses keeps its source", "blocks", len(blocks))
	}
	sync(time.Now())
	d.every(ctx, noMasqLocalCheck, sync)
}

// ownedBlocks are the CIDR blocks of the ring entries peer owns: each
// entry runs from its token for Size addresses, wrapping at the end of
// the universe.
func ownedBlocks(entries []ipamEntry, peer string, universe address.Range) []netip.Prefix {
	var out []netip.Prefix
	for _, e := range entries {
		if e.Peer != peer {
			continue
		}
		start, err := address.ParseIP(e.Token)
		if err != nil || !universe.Contains(start) {
			continue
		}
		size := address.Offset(e.Size)
		first := address.NewRange(start, min(size, address.Subtract(universe.End, start)))
		rs := []address.Range{first}
		if rest := size - first.Size(); rest > 0 {
			rs = append(rs, address.NewRange(universe.Start, rest))
		}
		for _, r := range rs {
			for _, c := range r.CIDRs() {
				out = append(out, c.Prefix())
			}
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out
}
