package router

import (
	"log/slog"
	"time"

	"github.com/weaveworks/mesh"
)

// Config configures a NetworkRouter.
type Config struct {
	Logger    *slog.Logger
	MACMaxAge time.Duration // MAC cache entry lifetime; default 10 min (Weave's macMaxAge)
	PktDebug  bool          // log every frame decision at debug level
}

// NetworkRouter is the L2 switch between the local bridge and the overlays:
// MAC learning, unicast along mesh unicast routes, broadcast along mesh
// broadcast routes, relaying for multi-hop.
type NetworkRouter struct{}

// NewNetworkRouter builds a router over the given overlays, in preference
// order (e.g. fastdp, sleeve).
func NewNetworkRouter(cfg Config, overlays ...Overlay) *NetworkRouter { panic("TODO") }

// MeshOverlay is the mesh.Overlay (the overlay switch) to pass to
// mesh.NewRouter.
func (r *NetworkRouter) MeshOverlay() mesh.Overlay { panic("TODO") }

// Start binds the router to the mesh (routes, peers) and the bridge
// injector. Call after mesh.NewRouter and before mesh.Router.Start.
func (r *NetworkRouter) Start(m *mesh.Router, inj Injector) { panic("TODO") }

// HandleCaptured is called for every frame captured from the local bridge.
func (r *NetworkRouter) HandleCaptured(frame []byte) { panic("TODO") }

// HandleForwarded implements FrameHandler.
func (r *NetworkRouter) HandleForwarded(srcPeer, dstPeer mesh.PeerName, frame []byte) {
	panic("TODO")
}

// Status is the router part of Weave's report (Interface, CaptureStats, MACs).
type Status struct {
	MACs []MACStatus
}

// MACStatus is one MAC cache entry as Weave reports it.
type MACStatus struct {
	Mac      string
	Name     string
	NickName string
	LastSeen time.Time
}

// Status returns a snapshot of the router's state.
func (r *NetworkRouter) Status() Status { panic("TODO") }

// Stop stops the router's background work. Idempotent.
func (r *NetworkRouter) Stop() { panic("TODO") }
