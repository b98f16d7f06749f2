//go:build unix

package pidfile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockRunDir takes an exclusive flock on lockPath, held until the file is
// closed (or the process dies: a crashed weaver never blocks the next
// one). busy is true when another process holds it.
func lockRunDir(lockPath string) (f *os.File, busy bool, err error) {
	f, err = os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("open lock file %s: %w", lockPath, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	return f, false, nil
}
