package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seedf75a49c6/weave/internal/api"
	"github.com/seedf75a49c6/weave/internal/cli"
	"github.com/seedf75a49c6/weave/internal/iptables"
)

// WeaverFlags are the flags 2.8.1's launch.sh gave weaver in a DaemonSet,
// from c, followed by EXTRA_ARGS and the peers to dial. consensus is the
// number of peers for IPALLOC_INIT's default, consensus=<n>. The flags
// `weave launch` itself adds (data and run dirs, HTTP address, port, MTU)
// come from cli.WeaverArgv.
func (c Config) WeaverFlags(peers []string, consensus int) []string {
	init := c.IPAllocInit
	if init == "" {
		init = "consensus=" + strconv.Itoa(max(consensus, 1))
	}
	f := []string{
		"--nickname=" + c.NodeName,
		"--ipalloc-range=" + c.IPAllocRange.String(),
		"--ipalloc-init=" + init,
		"--conn-limit=" + strconv.Itoa(c.ConnLimit),
		"--docker-api=",
		"--no-dns",
	}
	opt := func(flag, val string) {
		if val != "" {
			f = append(f, flag+"="+val)
		}
	}
	opt("--metrics-addr", c.MetricsAddr)
	opt("--status-addr", c.StatusAddr)
	opt("--db-prefix", c.DBPrefix)
	if c.ExpectNPC {
		f = append(f, "--expect-npc")
	}
	if c.NoMasqLocal {
		f = append(f, "--no-masq-local")
	}
	f = append(f, c.ExtraArgs...)
	return append(f, peers...)
}

// weaverCLI is the cli.Config weaver runs under: the WEAVE_* settings plus
// WEAVE_MTU as validated.
func (c Config) weaverCLI() cli.Config {
	w := c.Weave
	if c.MTU > 0 {
		w.MTU = strconv.Itoa(c.MTU)
	}
	return w
}

// childEnv is the environment of weaver and the helpers we run: ours, with
// the password and the iptables backend chosen.
func (c Config) childEnv(b iptables.Backend) []string {
	env := os.Environ()
	if c.Password != "" {
		env = append(env, "WEAVE_PASSWORD="+c.Password)
	}
	return append(env, iptables.EnvVar+"="+string(b))
}

// PrintPeerName runs `weaver --print-peer-name` with the flags weaver will
// run with, so the name is the one the router will use.
func (c Config) PrintPeerName(ctx context.Context, b iptables.Backend) (string, error) {
	argv, err := cli.WeaverArgv(ctx, c.weaverCLI(), append(c.WeaverFlags(nil, 1), "--print-peer-name"))
	if err != nil {
		return "", fmt.Errorf("weaver command line: %w", err)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = c.childEnv(b)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%s --print-peer-name: %w: %s", argv[0], err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("%s --print-peer-name: %w", argv[0], err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Weaver is a weaver process we started and supervise.
type Weaver struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done closes
	API  *api.Client
}

// StartWeaver starts weaver in the foreground (its output on out), as
// `weave launch` would build its command line.
func (c Config) StartWeaver(ctx context.Context, b iptables.Backend, peers []string, consensus int, out io.Writer) (*Weaver, error) {
	w := c.weaverCLI()
	argv, err := cli.WeaverArgv(ctx, w, c.WeaverFlags(peers, consensus))
	if err != nil {
		return nil, fmt.Errorf("weaver command line: %w", err)
	}
	for _, d := range []string{or(w.DataDir, "/var/lib/weave"), or(w.RunDir, "/run/weave")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("create directory %s: %w", d, err)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = c.childEnv(b), out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	wv := &Weaver{cmd: cmd, done: make(chan struct{}), API: api.NewClient(api.Config{Addr: or(w.HTTPAddr, api.DefaultAddr)})}
	go func() {
		wv.err = cmd.Wait()
		close(wv.done)
	}()
	return wv, nil
}

// Done is closed when weaver has exited; Err then says how.
func (w *Weaver) Done() <-chan struct{} { return w.done }

// Err is how weaver exited (after Done).
func (w *Weaver) Err() error {
	if w.err == nil {
		return errors.New("weaver exited")
	}
	return fmt.Errorf("weaver exited: %w", w.err)
}

// WaitReady polls GET /status (a child's HTTP server has no readiness event
// we could wait on) until it answers, weaver exits, or ctx ends.
func (w *Weaver) WaitReady(ctx context.Context) error {
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := w.API.Ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-w.done:
			return w.Err()
		case <-ctx.Done():
			return fmt.Errorf("wait for weaver on %s: %w (last: %v)", w.API.Addr(), ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM, then SIGKILL after grace, and waits for the exit.
func (w *Weaver) Stop(grace time.Duration) {
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(grace):
		_ = w.cmd.Process.Kill()
		<-w.done
	}
}
