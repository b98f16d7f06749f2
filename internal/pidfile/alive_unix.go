//go:build unix

package pidfile

import (
	"errors"
	"syscall"
)

// Alive reports whether pid exists (signal 0 succeeds, or is only refused
// for lack of permission) and, where /proc shows it, is not a zombie.
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	alive, ok := StatState("/proc", pid)
	return alive || !ok // no /proc: trust the signal probe
}
