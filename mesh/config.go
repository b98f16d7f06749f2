package mesh

import (
	"errors"
	"fmt"

	wmesh "github.com/weaveworks/mesh"
)

// ErrBadConfig is wrapped by CheckRouterConfig's errors.
var ErrBadConfig = errors.New("invalid mesh router config")

// CheckRouterConfig rejects mesh.Config values that the library accepts
// but that are unsafe. In particular ProtocolMinVersion 0 (the zero value,
// the library has no defaults) lets any remote that sends the header
// "weave\x00\x00" negotiate version 0, which hits
// panic("unhandled protocol version") in mesh protocol.go doIntro and
// kills the whole process. Call it before mesh.NewRouter.
func CheckRouterConfig(c wmesh.Config) error {
	if c.ProtocolMinVersion < wmesh.ProtocolMinVersion || c.ProtocolMinVersion > wmesh.ProtocolMaxVersion {
		return fmt.Errorf("check ProtocolMinVersion %d (want %d..%d): %w", c.ProtocolMinVersion,
			wmesh.ProtocolMinVersion, wmesh.ProtocolMaxVersion, ErrBadConfig)
	}
	if c.Port <= 0 || c.Port > 65535 {
		return fmt.Errorf("check Port %d: %w", c.Port, ErrBadConfig)
	}
	if c.ConnLimit <= 0 {
		return fmt.Errorf("check ConnLimit %d (0 refuses every connection): %w", c.ConnLimit, ErrBadConfig)
	}
	if c.Password != nil && len(c.Password) == 0 {
		return fmt.Errorf("check Password: empty but non-nil enables crypto with no secret: %w", ErrBadConfig)
	}
	if c.GossipInterval != nil && *c.GossipInterval <= 0 {
		return fmt.Errorf("check GossipInterval %v: %w", *c.GossipInterval, ErrBadConfig)
	}
	return nil
}
