package meshsim

import (
	"sync"

	"github.com/weaveworks/mesh"

	"github.com/seedf75a49c6/weave/router"
)

type link struct{ a, b mesh.PeerName }

func mkLink(a, b mesh.PeerName) link {
	if a > b {
		a, b = b, a
	}
	return link{a, b}
}

// Network is the in-memory data plane shared by the fake overlays: it
// knows each peer's FrameHandler, which links are cut, and records every
// delivery.
type Network struct {
	mu         sync.Mutex
	handlers   map[mesh.PeerName]router.FrameHandler
	overlays   map[mesh.PeerName][]*FakeOverlay
	cut        map[link]bool
	deliveries []Delivery
}

// NewNetwork returns an empty network.
func NewNetwork() *Network {
	return &Network{
		handlers: make(map[mesh.PeerName]router.FrameHandler),
		overlays: make(map[mesh.PeerName][]*FakeOverlay),
		cut:      make(map[link]bool),
	}
}

// Attach registers peer's frame handler and overlays.
func (n *Network) Attach(peer mesh.PeerName, h router.FrameHandler, overlays ...*FakeOverlay) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.handlers[peer] = h
	n.overlays[peer] = append(n.overlays[peer], overlays...)
}

func (n *Network) handler(peer mesh.PeerName) router.FrameHandler {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.handlers[peer]
}

// Cut drops every frame between a and b from now on and makes their
// forwarders report an error (so mesh tears the connection down).
func (n *Network) Cut(a, b mesh.PeerName) {
	n.mu.Lock()
	n.cut[mkLink(a, b)] = true
	oa, ob := n.overlays[a], n.overlays[b]
	n.mu.Unlock()
	for _, o := range oa {
		o.failLink(b)
	}
	for _, o := range ob {
		o.failLink(a)
	}
}

// IsCut reports whether the link between a and b is cut.
func (n *Network) IsCut(a, b mesh.PeerName) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[mkLink(a, b)]
}

func (n *Network) record(d Delivery) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deliveries = append(n.deliveries, d)
}

// Deliveries returns a copy of all recorded deliveries.
func (n *Network) Deliveries() []Delivery {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Delivery(nil), n.deliveries...)
}

// ResetDeliveries forgets recorded deliveries.
func (n *Network) ResetDeliveries() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deliveries = nil
}

// Injector is a router.Injector that records injected frames.
type Injector struct {
	mu     sync.Mutex
	frames [][]byte
}

var _ router.Injector = (*Injector)(nil)

// InjectFrame implements router.Injector.
func (i *Injector) InjectFrame(frame []byte) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.frames = append(i.frames, append([]byte(nil), frame...))
	return nil
}

// Frames returns copies of the injected frames.
func (i *Injector) Frames() [][]byte {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([][]byte(nil), i.frames...)
}

// Reset forgets injected frames.
func (i *Injector) Reset() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.frames = nil
}
