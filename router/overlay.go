package router

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/weaveworks/mesh"
)

// FrameHandler receives Ethernet frames that arrived over an overlay.
// Overlays call it from their receive goroutines; implementations must be
// safe for concurrent use.
type FrameHandler interface {
	// HandleForwarded is called for every data frame an overlay receives.
	// srcPeer is the peer that captured the frame, dstPeer the peer it is
	// addressed to (for broadcasts, the next hop, i.e. us). frame is only
	// valid for the duration of the call.
	HandleForwarded(srcPeer, dstPeer mesh.PeerName, frame []byte)
}

// LateHandler is the FrameHandler of an overlay built before the
// NetworkRouter it feeds (the router takes its overlays at construction):
// it hands frames to the router once Set, and drops them before.
type LateHandler struct {
	r atomic.Pointer[NetworkRouter]
}

// Set makes r the receiver of every later frame.
func (h *LateHandler) Set(r *NetworkRouter) { h.r.Store(r) }

// HandleForwarded implements FrameHandler.
func (h *LateHandler) HandleForwarded(src, dst mesh.PeerName, frame []byte) {
	if r := h.r.Load(); r != nil {
		r.HandleForwarded(src, dst, frame)
	}
}

// Overlay is one data-plane transport (sleeve, fastdp). The router's
// OverlaySwitch offers every registered Overlay to each mesh connection and
// forwards over the best one that is established.
type Overlay interface {
	// Name is the name advertised in the "Overlays" connection feature
	// (e.g. "sleeve").
	Name() string
	// PrepareConnection returns a passive forwarder for one mesh
	// connection. It must stay passive until Confirm is called.
	// params.SendControlMessage already wraps messages for this overlay.
	PrepareConnection(params mesh.OverlayConnectionParams) (Forwarder, error)
	// Diagnostics returns typed, JSON-encodable status.
	Diagnostics() any
	// Stop releases sockets and goroutines. Idempotent.
	Stop()
}

// DisplayNamer may be implemented by an Overlay whose name in status
// texts, the report and metrics differs from the name it negotiates in the
// Overlays feature (fastdp: shown as Weave shows its fast datapath,
// negotiated under a name of our own so mixed links never pick it).
type DisplayNamer interface {
	DisplayName() string
}

// displayName is what people see for o.
func displayName(o Overlay) string {
	if d, ok := o.(DisplayNamer); ok {
		return d.DisplayName()
	}
	return o.Name()
}

// Forwarder carries frames to one remote peer over one overlay.
type Forwarder interface {
	mesh.OverlayConnection
	// Forward sends one frame towards the forwarder's remote peer.
	// srcPeer is the capturing peer, dstPeer the final destination peer
	// (for broadcasts: the remote peer of this forwarder). frame must not
	// be retained after Forward returns. Forward must be safe for
	// concurrent use and must not allocate on the steady-state path.
	//
	// It returns nil when the frame was queued or sent, ErrCannotForward
	// when this overlay cannot carry it (the switch then tries the next
	// overlay), or a *FrameTooBigError when an IPv4 frame with DF set does
	// not fit the path MTU (the router answers the sender with ICMP
	// "fragmentation needed").
	Forward(srcPeer, dstPeer mesh.PeerName, frame []byte) error
}

// ErrCannotForward is returned by Forwarder.Forward when the overlay cannot
// carry a frame and another overlay should be tried.
var ErrCannotForward = errors.New("overlay cannot forward this frame")

// FrameTooBigError reports that a frame with the IPv4 DF bit set is larger
// than the path allows. MTU is the largest IP packet that fits.
type FrameTooBigError struct {
	MTU int
}

func (e *FrameTooBigError) Error() string {
	return fmt.Sprintf("frame too big for path MTU %d", e.MTU)
}

// Injector writes frames into the local bridge.
type Injector interface {
	InjectFrame(frame []byte) error
}
