package fastdp

import (
	"github.com/seedf75a49c6/weave/internal/netns"
)

// nsKernel runs every netlinkKernel call inside one network namespace, so
// that goroutines on any OS thread act on that namespace. Sockets opened
// there stay bound to its devices.
type nsKernel struct{ path string }

// NewKernelIn returns the Linux Kernel acting in the network namespace at
// path (e.g. /var/run/netns/x): for tests that run several hosts in one
// process.
func NewKernelIn(path string) Kernel { return nsKernel{path: path} }

var nl0 = netlinkKernel{}

func (k nsKernel) do(fn func() error) error { return netns.Do(k.path, fn) }

func (k nsKernel) Probe() error               { return k.do(nl0.Probe) }
func (k nsKernel) AddVXLAN(s VXLANSpec) error { return k.do(func() error { return nl0.AddVXLAN(s) }) }
func (k nsKernel) AppendFDB(e FDBEntry) error { return k.do(func() error { return nl0.AppendFDB(e) }) }
func (k nsKernel) DelLink(dev string) error   { return k.do(func() error { return nl0.DelLink(dev) }) }
func (k nsKernel) SetPort(dev string, f PortFlags) error {
	return k.do(func() error { return nl0.SetPort(dev, f) })
}
func (k nsKernel) SetIsolated(dev string, on bool) error {
	return k.do(func() error { return nl0.SetIsolated(dev, on) })
}

func (k nsKernel) Links(prefix string) (out []string, err error) {
	err = k.do(func() (e error) { out, e = nl0.Links(prefix); return e })
	return out, err
}

func (k nsKernel) OpenPacket(dev string) (c PacketConn, err error) {
	err = k.do(func() (e error) { c, e = nl0.OpenPacket(dev); return e })
	return c, err
}
