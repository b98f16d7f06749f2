// Package sleeve is weave's userspace UDP overlay, wire compatible with
// Weave Net 2.8.1's sleeve.
package sleeve

import (
	"log/slog"

	"github.com/seedf75a49c6/weave/router"
	"github.com/weaveworks/mesh"
)

// Config configures the sleeve overlay.
type Config struct {
	Host      string              // bind address for UDP; "" = all addresses
	Port      int                 // UDP port, the same number as the mesh TCP port (default 6783)
	LocalPeer mesh.PeerName       // our peer name (datagram sender field)
	Handler   router.FrameHandler // receives decoded data frames
	Logger    *slog.Logger
	PktDebug  bool
}

// Overlay is the sleeve overlay; it implements router.Overlay.
type Overlay struct{}

var _ router.Overlay = (*Overlay)(nil)

// New binds the UDP socket(s) and starts the receive loop.
func New(cfg Config) (*Overlay, error) { panic("TODO") }

// Name implements router.Overlay.
func (o *Overlay) Name() string { return "sleeve" }

// PrepareConnection implements router.Overlay.
func (o *Overlay) PrepareConnection(p mesh.OverlayConnectionParams) (router.Forwarder, error) {
	panic("TODO")
}

// Diagnostics implements router.Overlay.
func (o *Overlay) Diagnostics() any { panic("TODO") }

// Stop implements router.Overlay.
func (o *Overlay) Stop() { panic("TODO") }
