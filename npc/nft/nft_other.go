//go:build !linux

package nft

import (
	"errors"

	"github.com/seedf75a49c6/weave/npc"
)

// DefaultTable is the name of our table (family inet).
const DefaultTable = "weave-npc"

// Config says where to enforce.
type Config struct {
	Bridge, Table  string
	AllowMulticast bool
}

// Enforcer is Linux only.
type Enforcer struct{}

// Stats describe the last table loaded.
type Stats struct{ Rules, Sets, Elements int }

// Blocked is a count of dropped new connections to one protocol and port.
type Blocked struct {
	Proto   npc.Proto
	Port    uint16
	Packets uint64
}

var errUnsupported = errors.New("nft: only supported on Linux")

// New fails off Linux.
func New(Config) (*Enforcer, error) { return nil, errUnsupported }

// Close is a no-op.
func (*Enforcer) Close() error { return nil }

// Apply fails off Linux.
func (*Enforcer) Apply(*npc.Model) (Stats, error) { return Stats{}, errUnsupported }

// Remove fails off Linux.
func (*Enforcer) Remove() error { return errUnsupported }

// Blocked fails off Linux.
func (*Enforcer) Blocked() ([]Blocked, error) { return nil, errUnsupported }

// EnsureBridgeNetfilter fails off Linux.
func EnsureBridgeNetfilter() (bool, error) { return false, errUnsupported }
