package router

import (
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
	macs := make([]MACStatus, 0, len(snap))
	for _, e := range snap {
		st := MACStatus{Mac: e.MAC.String(), Name: e.Peer.String(), LastSeen: e.LastSeen}
		if r.mesh != nil {
			if p := r.mesh.Peers.Fetch(e.Peer); p != nil {
				st.NickName = p.NickName
			}
		}
		macs = append(macs, st)
	}
	diags, _ := r.sw.Diagnostics().(map[string]any)
	return Status{MACs: macs, OverlayDiagnostics: diags}
}
