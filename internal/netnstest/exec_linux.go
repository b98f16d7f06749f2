package netnstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// CommandTimeout bounds every command run through Exec, Output and Weave.
const CommandTimeout = 60 * time.Second

// run executes a command in the current (root) namespace and returns its
// combined output.
func run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), CommandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// Command returns an unstarted `ip netns exec ns args...`.
func Command(ctx context.Context, ns string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns}, args...)...)
}

// Output runs args inside namespace ns and returns stdout. On failure the
// error names the command and carries stderr.
func Output(ns string, args ...string) (string, error) {
	return outputEnv(ns, nil, args...)
}

func outputEnv(ns string, env []string, args ...string) (string, error) {
	return outputEnvTimeout(CommandTimeout, ns, env, args...)
}

func outputEnvTimeout(timeout time.Duration, ns string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := Command(ctx, ns, args...)
	if env != nil {
		cmd.Env = env
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A detached daemon may inherit our pipes; don't wait for it to close them.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("run %q in %s: %w; stderr: %s",
			strings.Join(args, " "), ns, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Exec runs args inside namespace ns, returning an error carrying stderr.
func Exec(ns string, args ...string) error {
	_, err := Output(ns, args...)
	return err
}

// WeaveEnv is the environment the weave script gets on host h.
func (tp *Topology) WeaveEnv(h *Host) []string {
	env := os.Environ()
	binDir := filepath.Join(filepath.Dir(tp.cfg.Weave), "bin")
	return append(env,
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"WEAVE_RUN_DIR="+h.RunDir,
		"WEAVE_DATA_DIR="+h.DataDir,
		"WEAVE_HOST_ROOT="+h.HostRoot,
		"WEAVE_HTTP_ADDR="+tp.cfg.HTTPAddr,
		"WEAVE_BIN_DIR="+binDir,
		"CHECKPOINT_DISABLE=1",
	)
}

// Weave runs `weave args...` inside host h with its run/data directories
// and returns stdout.
func (tp *Topology) Weave(h *Host, args ...string) (string, error) {
	return outputEnv(h.NS, tp.WeaveEnv(h), append([]string{"sh", tp.cfg.Weave}, args...)...)
}

// StartRouter runs `weave launch args...` on host h and returns the peer
// name it prints (its last non-empty output line).
func (tp *Topology) StartRouter(h *Host, args ...string) (string, error) {
	out, err := tp.Weave(h, append([]string{"launch"}, args...)...)
	if err != nil {
		return "", fmt.Errorf("launch router on %s: %w", h.Name, err)
	}
	lines := strings.Fields(out)
	if len(lines) == 0 {
		return "", fmt.Errorf("launch router on %s: printed no peer name", h.Name)
	}
	return lines[len(lines)-1], nil
}

// Ping sends count pings from namespace ns to ip (1 s timeout each after
// the first reply) and returns ping's output; extra arguments go before ip.
func Ping(ns, ip string, count int, extra ...string) (string, error) {
	args := append([]string{"ping", "-n", "-c", fmt.Sprint(count), "-i", "0.2", "-W", "2"}, extra...)
	return Output(ns, append(args, ip)...)
}

// Proc is a background command in a namespace, stopped at cleanup.
type Proc struct {
	Cmd    *exec.Cmd
	stdout lockedWriter
	stderr lockedWriter
	done   chan struct{}
	err    error
}

// Start runs args inside namespace ns in the background. The returned
// Proc is killed and reaped at cleanup if still running.
func (tp *Topology) Start(ns string, args ...string) *Proc {
	tp.t.Helper()
	p := &Proc{done: make(chan struct{})}
	p.Cmd = Command(context.Background(), ns, args...)
	p.Cmd.Stdout, p.Cmd.Stderr = &p.stdout, &p.stderr
	if err := p.Cmd.Start(); err != nil {
		tp.t.Fatalf("start %q in %s: %v", strings.Join(args, " "), ns, err)
	}
	go func() { p.err = p.Cmd.Wait(); close(p.done) }() // joined by Wait/Stop
	tp.mu.Lock()
	tp.procs = append(tp.procs, p)
	tp.mu.Unlock()
	return p
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits up to timeout for the process to exit and returns its error.
func (p *Proc) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("wait for %q: still running after %v", strings.Join(p.Cmd.Args, " "), timeout)
	}
}

// Stop sends sig (SIGINT lets tcpdump flush), waits up to 5 s, then kills.
// Idempotent; returns the exit error.
func (p *Proc) Stop(sig os.Signal) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.Cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
	return p.err
}

// Stdout and Stderr return what the process wrote so far.
func (p *Proc) Stdout() string { return p.stdout.String() }

// Stderr returns what the process wrote to stderr so far.
func (p *Proc) Stderr() string { return p.stderr.String() }

// WaitStderr waits until the process's stderr contains s (an event: e.g.
// tcpdump's "listening on"), or it exits, or timeout passes.
func (p *Proc) WaitStderr(s string, timeout time.Duration) error {
	return Poll(timeout, func() error {
		if strings.Contains(p.Stderr(), s) {
			return nil
		}
		select {
		case <-p.done:
			return errors.New("process exited before writing " + s + ": " + p.Stderr())
		default:
			return fmt.Errorf("no %q on stderr yet: %s", s, p.Stderr())
		}
	})
}
