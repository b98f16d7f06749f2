//go:build linux

package netns

import (
	"errors"
	"fmt"
	"runtime"

	vnetns "github.com/vishvananda/netns"
)

// ErrUnsupported is returned on platforms without network namespaces (never
// on Linux; declared here so callers can reference it on every platform).
var ErrUnsupported = errors.New("network namespaces are only supported on Linux")

// Do runs fn with the calling goroutine's OS thread inside the network
// namespace at path (for example /var/run/netns/x or /proc/PID/ns/net), then
// moves the thread back to the namespace it was in. Calls may nest. If the
// thread cannot be moved back it stays locked and dies with the goroutine.
func Do(path string, fn func() error) error {
	target, err := vnetns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", path, err)
	}
	defer target.Close()
	return DoHandle(target, fn)
}

// DoHandle is Do for an already open namespace handle.
func DoHandle(target vnetns.NsHandle, fn func() error) error {
	runtime.LockOSThread()
	orig, err := vnetns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("get current netns: %w", err)
	}
	defer orig.Close()
	if err := vnetns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter netns %s: %w", target, err)
	}
	fnErr := fn()
	if err := vnetns.Set(orig); err != nil {
		// Keep the thread locked: the runtime kills it when the goroutine ends.
		return errors.Join(fnErr, fmt.Errorf("restore netns %s: %w", orig, err))
	}
	runtime.UnlockOSThread()
	return fnErr
}

// RandomName returns prefix plus 5 random hex characters.
func RandomName(prefix string) string { return randomName(prefix) }
