// Package pidfile is weaver's pid file in its run dir and the liveness
// check of the process a pid file names. The daemon holds the file while
// it runs (Acquire/Release); the CLI reads it to find, stop and wait for
// the router (Read, StatState).
package pidfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Name is the pid file weaver keeps in its run dir.
const Name = "weaver.pid"

// AlreadyRunningError reports that another live weaver holds the pid file.
type AlreadyRunningError struct {
	PID int
}

func (e *AlreadyRunningError) Error() string {
	return fmt.Sprintf("weave router already running (pid %d)", e.PID)
}

// File is a held pid file.
type File struct {
	path string
	pid  int
}

// Acquire writes our pid to runDir/weaver.pid. It fails with
// *AlreadyRunningError when the file names another live process; a stale
// file (dead process, garbage) is replaced.
func Acquire(runDir string) (*File, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("create run dir %s: %w", runDir, err)
	}
	path := filepath.Join(runDir, Name)
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
			return &File{path: path, pid: me}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create pid file %s: %w", path, err)
		}
		if pid, err := Read(path); err == nil && pid != me && Alive(pid) {
			return nil, &AlreadyRunningError{PID: pid}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale pid file %s: %w", path, err)
		}
	}
	return nil, fmt.Errorf("create pid file %s: lost a race with another weaver", path)
}

// Read returns the pid recorded at path.
func Read(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s: malformed content %q", path, strings.TrimSpace(string(b)))
	}
	return pid, nil
}

// Write records pid at path atomically (a temporary file, then rename).
func Write(path string, pid int) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("write pid file %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename pid file %s: %w", tmp, err)
	}
	return nil
}

// StatState reads procDir/<pid>/stat (procDir is normally /proc). ok is
// false when the file cannot be read or parsed; otherwise alive reports
// that the process is neither a zombie nor dead: a weaver killed with
// SIGKILL whose parent never reaps it must not block the next launch.
func StatState(procDir string, pid int) (alive, ok bool) {
	stat, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "stat"))
	if err != nil {
		return false, false
	}
	// Format: "pid (comm) S ...": the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false, false
	}
	return stat[i+2] != 'Z' && stat[i+2] != 'X', true
}

// Path is the pid file's path.
func (p *File) Path() string { return p.path }

// Release removes the pid file if it still holds our pid. Idempotent.
func (p *File) Release() error {
	if pid, err := Read(p.path); err != nil || pid != p.pid {
		return nil
	}
	if err := os.Remove(p.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove pid file %s: %w", p.path, err)
	}
	return nil
}
