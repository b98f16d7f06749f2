package meshsim

import (
	"errors"
	"sync"

	"github.com/weaveworks/mesh"

	"github.com/seedf75a49c6/weave/router"
)

// Delivery records one frame carried by a fake forwarder over a link.
type Delivery struct {
	Overlay  string        // overlay name
	From, To mesh.PeerName // link endpoints (this hop)
	Src, Dst mesh.PeerName // capturing peer and destination peer as passed to Forward
	Frame    []byte        // copy of the frame
	Dropped  bool          // the link was cut or the overlay stopped
}

// errLinkCut is reported on the error channel of forwarders on a cut link.
var errLinkCut = errors.New("meshsim: link cut")

// FakeOverlay is an in-memory router.Overlay. Its forwarders hand frames
// synchronously to the remote peer's FrameHandler, so by the time
// HandleCaptured returns every hop of the frame has been delivered.
type FakeOverlay struct {
	name  string
	local mesh.PeerName
	net   *Network

	mu      sync.Mutex
	fwds    []*FakeForwarder
	stopped bool
}

var _ router.Overlay = (*FakeOverlay)(nil)

// NewFakeOverlay returns an overlay called name for peer local on net.
func NewFakeOverlay(name string, local mesh.PeerName, net *Network) *FakeOverlay {
	return &FakeOverlay{name: name, local: local, net: net}
}

// Name implements router.Overlay.
func (o *FakeOverlay) Name() string { return o.name }

// PrepareConnection implements router.Overlay.
func (o *FakeOverlay) PrepareConnection(p mesh.OverlayConnectionParams) (router.Forwarder, error) {
	f := &FakeForwarder{
		overlay:     o,
		remote:      p.RemotePeer.Name,
		send:        p.SendControlMessage,
		established: make(chan struct{}),
		errc:        make(chan error, 1),
	}
	o.mu.Lock()
	o.fwds = append(o.fwds, f)
	o.mu.Unlock()
	return f, nil
}

// Diagnostics implements router.Overlay.
func (o *FakeOverlay) Diagnostics() any { return FakeDiagnostics{Name: o.name} }

// FakeDiagnostics is the FakeOverlay's diagnostics.
type FakeDiagnostics struct{ Name string }

// Stop implements router.Overlay. Idempotent.
func (o *FakeOverlay) Stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped = true
}

func (o *FakeOverlay) isStopped() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stopped
}

// ForwarderTo returns the most recently prepared forwarder to remote, or
// nil.
func (o *FakeOverlay) ForwarderTo(remote mesh.PeerName) *FakeForwarder {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.fwds) - 1; i >= 0; i-- {
		if o.fwds[i].remote == remote {
			return o.fwds[i]
		}
	}
	return nil
}

// failLink reports errLinkCut on every confirmed forwarder towards remote.
func (o *FakeOverlay) failLink(remote mesh.PeerName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, f := range o.fwds {
		if f.remote == remote {
			f.fail(errLinkCut)
		}
	}
}

// FakeForwarder is a FakeOverlay's forwarder to one remote peer.
type FakeForwarder struct {
	overlay     *FakeOverlay
	remote      mesh.PeerName
	send        func(byte, []byte) error
	established chan struct{}
	errc        chan error

	mu        sync.Mutex
	confirmed bool
	estClosed bool
	stopped   bool
	ctrl      []ControlMessage
}

// ControlMessage is one control message a FakeForwarder received.
type ControlMessage struct {
	Tag byte
	Msg []byte
}

var _ router.Forwarder = (*FakeForwarder)(nil)

// Confirm implements mesh.OverlayConnection: the forwarder is established
// at once unless the link is cut.
func (f *FakeForwarder) Confirm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.confirmed = true
	if !f.overlay.net.IsCut(f.overlay.local, f.remote) && !f.estClosed {
		f.estClosed = true
		close(f.established)
	}
}

func (f *FakeForwarder) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.confirmed || f.stopped {
		return
	}
	select {
	case f.errc <- err:
	default:
	}
}

// EstablishedChannel implements mesh.OverlayConnection.
func (f *FakeForwarder) EstablishedChannel() <-chan struct{} { return f.established }

// ErrorChannel implements mesh.OverlayConnection.
func (f *FakeForwarder) ErrorChannel() <-chan error { return f.errc }

// Stop implements mesh.OverlayConnection.
func (f *FakeForwarder) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
}

// ControlMessage implements mesh.OverlayConnection and records msg.
func (f *FakeForwarder) ControlMessage(tag byte, msg []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctrl = append(f.ctrl, ControlMessage{Tag: tag, Msg: append([]byte(nil), msg...)})
}

// SendControl sends a control message to the remote counterpart through
// the mesh connection (wrapped by the switch).
func (f *FakeForwarder) SendControl(tag byte, msg []byte) error { return f.send(tag, msg) }

// Received returns the control messages received so far.
func (f *FakeForwarder) Received() []ControlMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ControlMessage(nil), f.ctrl...)
}

// Attrs implements mesh.OverlayConnection.
func (f *FakeForwarder) Attrs() map[string]any {
	return map[string]any{"name": f.overlay.name, "mtu": 1438}
}

// Forward implements router.Forwarder: it records the frame and hands it
// to the remote peer's handler synchronously.
func (f *FakeForwarder) Forward(srcPeer, dstPeer mesh.PeerName, frame []byte) error {
	n := f.overlay.net
	from := f.overlay.local
	f.mu.Lock()
	stopped := f.stopped
	f.mu.Unlock()
	dropped := stopped || f.overlay.isStopped() || n.IsCut(from, f.remote)
	n.record(Delivery{Overlay: f.overlay.name, From: from, To: f.remote, Src: srcPeer, Dst: dstPeer,
		Frame: append([]byte(nil), frame...), Dropped: dropped})
	if dropped {
		return nil
	}
	if h := n.handler(f.remote); h != nil {
		h.HandleForwarded(srcPeer, dstPeer, frame)
	}
	return nil
}
