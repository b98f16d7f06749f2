//go:build !linux

package fastdp

import "errors"

// errUnsupported is returned by every Kernel method off Linux.
var errUnsupported = errors.New("fastdp: kernel VXLAN is only supported on Linux")

type otherKernel struct{}

// NewKernel returns a Kernel whose every call fails: the fast path is
// Linux only.
func NewKernel() Kernel { return otherKernel{} }

func (otherKernel) Probe() error                          { return errUnsupported }
func (otherKernel) AddVXLAN(VXLANSpec) error              { return errUnsupported }
func (otherKernel) SetPort(string, PortFlags) error       { return errUnsupported }
func (otherKernel) SetIsolated(string, bool) error        { return errUnsupported }
func (otherKernel) AppendFDB(FDBEntry) error              { return errUnsupported }
func (otherKernel) DelLink(string) error                  { return errUnsupported }
func (otherKernel) Links(string) ([]string, error)        { return nil, errUnsupported }
func (otherKernel) OpenPacket(string) (PacketConn, error) { return nil, errUnsupported }
