package weaver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PIDFileName is the pid file weaver keeps in its run dir.
const PIDFileName = "weaver.pid"

// AlreadyRunningError reports that another live weaver holds the pid file.
type AlreadyRunningError struct {
	PID int
}

func (e *AlreadyRunningError) Error() string {
	return fmt.Sprintf("weave router already running (pid %d)", e.PID)
}

// PIDFile is a held pid file.
type PIDFile struct {
	path string
	pid  int
}

// AcquirePIDFile writes our pid to runDir/weaver.pid. It fails with
// *AlreadyRunningError when the file names another live process; a stale
// file (dead process, garbage) is replaced.
func AcquirePIDFile(runDir string) (*PIDFile, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("create run dir %s: %w", runDir, err)
	}
	path := filepath.Join(runDir, PIDFileName)
	me := os.Getpid()
	for attempt := 0; attempt < 2; attempt++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, werr := fmt.Fprintf(f, "%d\n", me)
			cerr := f.Close()
			if werr = errors.Join(werr, cerr); werr != nil {
				_ = os.Remove(path)
				return nil, fmt.Errorf("write pid file %s: %w", path, werr)
			}
			return &PIDFile{path: path, pid: me}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create pid file %s: %w", path, err)
		}
		if pid, ok := readPID(path); ok && pid != me && processAlive(pid) {
			return nil, &AlreadyRunningError{PID: pid}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale pid file %s: %w", path, err)
		}
	}
	return nil, fmt.Errorf("create pid file %s: lost a race with another weaver", path)
}

func readPID(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}

// Path is the pid file's path.
func (p *PIDFile) Path() string { return p.path }

// Release removes the pid file if it still holds our pid. Idempotent.
func (p *PIDFile) Release() error {
	if pid, ok := readPID(p.path); !ok || pid != p.pid {
		return nil
	}
	if err := os.Remove(p.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove pid file %s: %w", p.path, err)
	}
	return nil
}
