//go:build unix

package weaver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// processAlive reports whether pid exists (signal 0 succeeds, or is only
// refused for lack of permission) and, where /proc shows it, is not a
// zombie: a weaver killed with SIGKILL whose parent never reaps it must not
// block the next launch.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: trust the signal probe
	}
	// Format: "pid (comm) S ...": the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return true
	}
	return stat[i+2] != 'Z' && stat[i+2] != 'X'
}
