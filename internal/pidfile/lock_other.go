//go:build !unix

package pidfile

import "os"

// lockRunDir opens lockPath without locking: no flock on this platform,
// so only the pid file's liveness check guards against a second weaver.
func lockRunDir(lockPath string) (*os.File, bool, error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	return f, false, err
}
