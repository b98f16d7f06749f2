//go:build !linux

package netdev

// EnsureNPCGuard returns ErrUnsupported outside Linux.
func EnsureNPCGuard(bridge string) error { return ErrUnsupported }

// RemoveNPCGuard returns ErrUnsupported outside Linux.
func RemoveNPCGuard() error { return ErrUnsupported }
