package router

import (
	"github.com/weaveworks/mesh"
	"sort"
	"time"
)

// Status is the router part of Weave's report (Interface, CaptureStats,
// MACs), plus the overlay diagnostics keyed by overlay name (Weave reports
// those under the mesh status's OverlayDiagnostics).
type Status struct {
	MACs               []MACStatus
	OverlayDiagnostics map[string]any
}

// MACStatus is one MAC cache entry as Weave reports it.
type MACStatus struct {
	Mac      string
	Name     string
	NickName string
	LastSeen time.Time
}

// Status returns a snapshot of the router's state. MACs are sorted by
// address.
func (r *NetworkRouter) Status() Status {
	snap := r.mac.Snapshot()
	sort.Slice(snap, func(i, j int) bool { return string(snap[i].MAC[:]) < string(snap[j].MAC[:]) })
	nicks := r.nickNames()
	macs := make([]MACStatus, 0, len(snap))
	for _, e := range snap {
		macs = append(macs, MACStatus{Mac: e.MAC.String(), Name: e.Peer.String(),
			NickName: nicks[e.Peer], LastSeen: e.LastSeen})
	}
	diags, _ := r.sw.Diagnostics().(map[string]any)
	return Status{MACs: macs, OverlayDiagnostics: diags}
}

// nickNames maps peer names to nicknames. It uses Peers.Descriptions,
// which copies under the peers lock (reading Peer fields directly races
// with topology updates).
func (r *NetworkRouter) nickNames() map[mesh.PeerName]string {
	out := map[mesh.PeerName]string{}
	b := r.bound.Load()
	if b == nil || b.mesh == nil {
		return out
	}
	for _, d := range b.mesh.Peers.Descriptions() {
		out[d.Name] = d.NickName
	}
	return out
}
