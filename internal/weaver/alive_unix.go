//go:build unix

package weaver

import (
	"errors"
	"syscall"
)

// processAlive reports whether pid exists (signal 0 succeeds, or is only
// refused for lack of permission).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
