package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/seedf75a49c6/weave/internal/pidfile"
)

// pidFile is $WEAVE_RUN_DIR/weaver.pid.
func (c *cmd) pidFile() string { return filepath.Join(c.RunDir, pidfile.Name) }

// logFile is $WEAVE_RUN_DIR/weaver.log.
func (c *cmd) logFile() string { return filepath.Join(c.RunDir, "weaver.log") }

// runningPID returns the pid recorded in the pid file if that process is
// alive and is a weaver; 0 otherwise (no file, stale file, reused pid).
func (c *cmd) runningPID() int {
	pid, err := pidfile.Read(c.pidFile())
	if err != nil {
		c.Logger.Debug("no usable pid file", "path", c.pidFile(), "err", err)
		return 0
	}
	if !c.alive(pid) || !c.isWeaver(pid) {
		c.Logger.Debug("ignoring stale pid file", "path", c.pidFile(), "pid", pid)
		return 0
	}
	return pid
}

// fileSize is the size of path, 0 when it cannot be read.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// alive reports whether pid exists and is not a zombie.
func (c *cmd) alive(pid int) bool {
	alive, ok := pidfile.StatState(c.ProcDir, pid)
	return ok && alive
}

// isWeaver reports whether pid runs a program called weaver (directly or
// as a script argument), so a reused pid is never signalled.
func (c *cmd) isWeaver(pid int) bool {
	data, err := os.ReadFile(filepath.Join(c.ProcDir, strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return false
	}
	args := strings.Split(string(data), "\x00")
	for i, a := range args {
		if i > 1 {
			break // argv[0], or argv[1] for "sh weaver" / interpreters
		}
		if strings.HasPrefix(filepath.Base(a), "weaver") {
			return true
		}
	}
	return false
}

// findBinary looks for name next to this executable (the ./bin the weave
// shim uses), then in $WEAVE_BIN_DIR, then in PATH.
func (c *cmd) findBinary(name string) (string, error) {
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	if c.BinDir != "" {
		dirs = append(dirs, c.BinDir)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("find %s (looked next to weaveutil, in WEAVE_BIN_DIR and PATH): %w", name, err)
	}
	return p, nil
}

func (c *cmd) weaverPath() (string, error) {
	if c.WeaverPath != "" {
		return c.WeaverPath, nil
	}
	return c.findBinary("weaver")
}

// startDetached starts argv in a new session with stdin from /dev/null and
// stdout+stderr appended to logPath, and returns its pid. The caller polls
// it with exited; it is never waited for by a goroutine.
func startDetached(argv []string, logPath string) (int, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open log %s: %w", logPath, err)
	}
	defer logf.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer null.Close()
	p, err := os.StartProcess(argv[0], argv, &os.ProcAttr{
		Files: []*os.File{null, logf, logf},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	pid := p.Pid
	_ = p.Release() // we poll with wait4 ourselves
	return pid, nil
}

// exited reaps pid if it is our child and has exited, without blocking.
// It returns a description such as "exit status 1" once it has exited.
func exited(pid int) (string, bool) {
	var ws syscall.WaitStatus
	got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	if err != nil {
		if errors.Is(err, syscall.ECHILD) {
			// Not our child (or already reaped): fall back to existence.
			if syscall.Kill(pid, 0) != nil {
				return "exited", true
			}
		}
		return "", false
	}
	if got != pid {
		return "", false
	}
	switch {
	case ws.Exited():
		return fmt.Sprintf("exit status %d", ws.ExitStatus()), true
	case ws.Signaled():
		return "killed by signal " + ws.Signal().String(), true
	}
	return "", false
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string { return tailFrom(path, 0, n) }

// tailFrom is tail of what path holds after byte offset from.
func tailFrom(path string, from int64, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	if from > 0 && from <= int64(len(data)) {
		data = data[from:]
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
