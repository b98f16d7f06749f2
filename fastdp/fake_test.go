package fastdp

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
)

// fakeNet is the underlay shared by fake kernels: frames written on a
// device are delivered to the device whose receive VNI equals the
// writer's FDB VNI, unless blocked or larger than maxFrame.
type fakeNet struct {
	mu       sync.Mutex
	byVNI    map[uint32]*fakeConn
	blocked  map[uint32]bool // by receive VNI
	maxFrame int             // 0 = unlimited
}

func newFakeNet() *fakeNet {
	return &fakeNet{byVNI: map[uint32]*fakeConn{}, blocked: map[uint32]bool{}}
}

func (n *fakeNet) block(rxVNI uint32, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.blocked[rxVNI] = on
}

func (n *fakeNet) setMaxFrame(m int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.maxFrame = m
}

func (n *fakeNet) deliver(txVNI uint32, frame []byte) {
	n.mu.Lock()
	c, blocked, max := n.byVNI[txVNI], n.blocked[txVNI], n.maxFrame
	n.mu.Unlock()
	if c == nil || blocked || (max > 0 && len(frame) > max) {
		return
	}
	select {
	case c.rx <- append([]byte(nil), frame...):
	default:
	}
}

// fakeKernel records every call as a line of text and keeps the set of
// links, in the spirit of `ip`/`bridge` commands.
type fakeKernel struct {
	net      *fakeNet
	probeErr error
	addErr   func(VXLANSpec) error // refuses AddVXLAN when it returns an error

	mu    sync.Mutex
	calls []string
	links map[string]VXLANSpec
	txVNI map[string]uint32
	data  map[string][][]byte // data frames written per device
}

var _ Kernel = (*fakeKernel)(nil)

func newFakeKernel(n *fakeNet) *fakeKernel {
	return &fakeKernel{net: n, links: map[string]VXLANSpec{}, txVNI: map[string]uint32{}, data: map[string][][]byte{}}
}

func (k *fakeKernel) record(format string, args ...any) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls = append(k.calls, fmt.Sprintf(format, args...))
}

// take returns and clears the recorded calls.
func (k *fakeKernel) take() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.calls
	k.calls = nil
	return c
}

func (k *fakeKernel) Probe() error {
	k.record("probe")
	return k.probeErr
}

func (k *fakeKernel) AddVXLAN(s VXLANSpec) error {
	k.record("%s", s)
	if k.addErr != nil {
		if err := k.addErr(s); err != nil {
			return err
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.links[s.Name]; ok {
		return errors.New("file exists")
	}
	k.links[s.Name] = s
	return nil
}

func (k *fakeKernel) SetPort(dev string, f PortFlags) error {
	k.record("%s", f.render(dev))
	return nil
}

func (k *fakeKernel) SetIsolated(dev string, on bool) error {
	k.record("brport %s isolated %v", dev, on)
	return nil
}

func (k *fakeKernel) AppendFDB(e FDBEntry) error {
	k.record("%s", e)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.txVNI[e.Dev] = e.VNI
	return nil
}

func (k *fakeKernel) DelLink(dev string) error {
	k.mu.Lock()
	spec, ok := k.links[dev]
	delete(k.links, dev)
	k.mu.Unlock()
	if ok {
		k.record("link del %s", dev)
		k.net.mu.Lock()
		delete(k.net.byVNI, spec.VNI)
		k.net.mu.Unlock()
	}
	return nil
}

func (k *fakeKernel) Links(prefix string) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for name := range k.links {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out, nil
}

func (k *fakeKernel) OpenPacket(dev string) (PacketConn, error) {
	k.mu.Lock()
	spec, ok := k.links[dev]
	tx := k.txVNI[dev]
	k.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no device %s", dev)
	}
	c := &fakeConn{k: k, dev: dev, txVNI: tx, rx: make(chan []byte, 256), done: make(chan struct{})}
	k.net.mu.Lock()
	k.net.byVNI[spec.VNI] = c
	k.net.mu.Unlock()
	return c, nil
}

func (k *fakeKernel) dataFrames(dev string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.data[dev])
}

type fakeConn struct {
	k     *fakeKernel
	dev   string
	txVNI uint32
	rx    chan []byte
	once  sync.Once
	done  chan struct{}
}

func (c *fakeConn) ReadFrame(buf []byte) (int, error) {
	select {
	case f := <-c.rx:
		return copy(buf, f), nil
	case <-c.done:
		return 0, net.ErrClosed
	}
}

func (c *fakeConn) WriteFrame(frame []byte) error {
	select {
	case <-c.done:
		return net.ErrClosed
	default:
	}
	if _, _, err := parseHeartbeat(frame); err != nil {
		c.k.mu.Lock()
		c.k.data[c.dev] = append(c.k.data[c.dev], append([]byte(nil), frame...))
		c.k.mu.Unlock()
	}
	c.k.net.deliver(c.txVNI, frame)
	return nil
}

func (c *fakeConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}
