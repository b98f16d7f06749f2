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
	lock *os.File // flock held on weaver.pid.lock while we run
}

// Acquire takes the run dir's lock (runDir/weaver.pid.lock, a flock the
// kernel drops when the holder dies) and then writes our pid to
// runDir/weaver.pid. It fails with *AlreadyRunningError when another
// process holds the lock, so two simultaneous launches cannot both win;
// whatever the pid file said before is replaced.
func Acquire(runDir string) (*File, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("create run dir %s: %w", runDir, err)
	}
	path := filepath.Join(runDir, Name)
	lock, busy, err := lockRunDir(path + ".lock")
	if err != nil {
		return nil, err
	}
	if busy {
		pid, _ := Read(path)
		return nil, &AlreadyRunningError{PID: pid}
	}
	me := os.Getpid()
	if err := Write(path, me); err != nil {
		lock.Close()
		return nil, err
	}
	return &File{path: path, pid: me, lock: lock}, nil
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

// Write records pid at path atomically: a temporary file of its own (so
// simultaneous writers never rename each other's), then rename.
func Write(path string, pid int) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write pid file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	_, werr := tmp.WriteString(strconv.Itoa(pid) + "\n")
	if err := errors.Join(werr, tmp.Chmod(0o644), tmp.Close()); err != nil {
		return fmt.Errorf("write pid file %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename pid file %s: %w", tmp.Name(), err)
	}
	return nil
}

// RemoveIf removes the pid file at path if it still records pid.
func RemoveIf(path string, pid int) error {
	if got, err := Read(path); err != nil || got != pid {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove pid file %s: %w", path, err)
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

// Release removes the pid file if it still holds our pid, then drops the
// run dir's lock. Idempotent.
func (p *File) Release() error {
	err := RemoveIf(p.path, p.pid)
	if p.lock != nil {
		p.lock.Close()
		p.lock = nil
	}
	return err
}
