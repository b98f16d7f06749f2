package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/seedf75a49c6/weave/internal/api"
	"github.com/seedf75a49c6/weave/internal/pidfile"
)

// logTailLines is how much of weaver.log launch shows when weaver dies.
const logTailLines = 20

// maxLogSize: launch moves a weaver.log larger than this to weaver.log.1
// (replacing the previous one) before starting weaver, so the log of a
// router relaunched for years does not grow without end.
const maxLogSize = 10 << 20

func rotateLog(path string, max int64) {
	if fileSize(path) > max {
		_ = os.Rename(path, path+".1")
	}
}

// runLaunch starts weaver detached and waits until it answers.
func runLaunch(ctx context.Context, c *cmd, args []string) error {
	l, err := parseLaunch(args)
	if err != nil {
		return err
	}
	c.applyLaunchFlags(l)
	if err := c.refuseIfRunning(ctx); err != nil {
		return err
	}
	argv, err := c.launchArgv(ctx, l, args)
	if err != nil {
		return err
	}
	for _, d := range []string{c.RunDir, c.DataDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create directory %s: %w", d, err)
		}
	}
	c.Logger.Debug("starting weaver", "argv", argv, "log", c.logFile())
	rotateLog(c.logFile(), maxLogSize)
	logStart := fileSize(c.logFile())
	pid, err := startDetached(argv, c.logFile())
	if err != nil {
		return err
	}
	// weaver writes its pid file itself, under the run dir's lock: two
	// simultaneous launches leave one router and a pid file naming it.
	// Until it does, the file names the child, unless a live process
	// already claims it.
	if c.runningPID() == 0 {
		if err := pidfile.Write(c.pidFile(), pid); err != nil {
			return err
		}
	}
	if err := c.waitReady(ctx, pid, logStart); err != nil {
		return err
	}
	name, err := c.api.PeerName(ctx)
	if err != nil {
		return fmt.Errorf("read peer name of the new router: %w", err)
	}
	fmt.Fprintln(c.Stdout, name)
	return nil
}

// applyLaunchFlags lets flags given to launch override the environment
// for the rest of the command (where to wait, where the pid file goes).
func (c *cmd) applyLaunchFlags(l launchArgs) {
	if addr, ok := l.given["http-addr"]; ok {
		c.HTTPAddr = addr
		c.api = api.NewClient(api.Config{Addr: addr})
	}
	if d, ok := l.given["run-dir"]; ok {
		c.RunDir = d
	}
	if d, ok := l.given["data-dir"]; ok {
		c.DataDir = d
	}
}

// refuseIfRunning fails when a router runs for this run dir or answers on
// the HTTP address.
func (c *cmd) refuseIfRunning(ctx context.Context) error {
	if pid := c.runningPID(); pid != 0 {
		return fmt.Errorf("weave router is already running (pid %d)", pid)
	}
	pctx, cancel := context.WithTimeout(ctx, api.DefaultConnectTimeout)
	defer cancel()
	if err := c.api.Ping(pctx); err == nil || api.StatusCode(err) != 0 {
		return fmt.Errorf("weave router is already running (it answers on %s)", c.api.Addr())
	}
	return nil
}

// weaverFlags are the flags launch adds from the environment, unless the
// user gave them.
func (c *cmd) weaverFlags(l launchArgs) []string {
	var out []string
	add := func(name, val string) {
		if _, ok := l.given[name]; !ok && val != "" {
			out = append(out, "--"+name+"="+val)
		}
	}
	add("data-dir", c.DataDir)
	add("run-dir", c.RunDir)
	add("http-addr", c.HTTPAddr)
	add("status-addr", c.StatusAddr)
	add("port", c.Port)
	add("mtu", c.MTU)
	if c.Debug {
		add("log-level", "debug")
	}
	if c.NoFastDP && !l.bools["no-fastdp"] {
		out = append(out, "--no-fastdp")
	}
	return out
}

// dockerFlags turn the Docker plugin and the Docker API proxy on, as
// 2.8.1's launch does, when a Docker engine answers on --docker-api
// (default: DOCKER_HOST's socket or /var/run/docker.sock) and we are in
// the host's network namespace; --plugin/--no-plugin, --proxy/--no-proxy
// or --docker-api "" leave each choice to the user.
func (c *cmd) dockerFlags(ctx context.Context, l launchArgs) []string {
	var on []string
	for _, s := range []string{"plugin", "proxy"} {
		if !l.bools[s] && !l.bools["no-"+s] {
			on = append(on, "--"+s)
		}
	}
	if len(on) == 0 {
		return nil
	}
	host, given := l.given["docker-api"]
	if !given {
		host = c.dockerHost()
	}
	if host == "" || !c.hostNetns() || !dockerAnswers(ctx, host) {
		c.Logger.Debug("Docker plugin and proxy off", "docker-api", host, "host-netns", c.hostNetns())
		return nil
	}
	if given {
		return on
	}
	return append(on, "--docker-api="+host)
}

// waitReady polls until GET /status answers 200, the process exits, or
// LaunchTimeout passes. When weaver exits, what it logged after logStart
// (this launch, not earlier ones) is shown.
func (c *cmd) waitReady(ctx context.Context, pid int, logStart int64) error {
	deadline := time.Now().Add(c.LaunchTimeout)
	tick := time.NewTicker(c.PollInterval)
	defer tick.Stop()
	for {
		if how, done := exited(pid); done {
			_ = pidfile.RemoveIf(c.pidFile(), pid)
			return fmt.Errorf("weave router exited before it was ready (%s); last lines of %s:\n%s",
				how, c.logFile(), tailFrom(c.logFile(), logStart, logTailLines))
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.api.Ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
		c.Logger.Debug("router not ready yet", "err", err)
		if time.Now().After(deadline) {
			return fmt.Errorf("weave router (pid %d) did not answer on %s within %v; see %s",
				pid, c.api.Addr(), c.LaunchTimeout, c.logFile())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for weave router: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// runStop stops the router; not running is fine.
func runStop(ctx context.Context, c *cmd, args []string) error {
	if len(args) > 0 {
		return usagef("stop: unexpected arguments %q", args)
	}
	return c.stopRouter(ctx)
}

// errNotRunningQuiet is reported on stderr by stop without failing.
var errNotRunningQuiet = errors.New("weave router is not running")

func (c *cmd) stopRouter(ctx context.Context) error {
	pid := c.runningPID()
	if pid == 0 {
		_ = os.Remove(c.pidFile())
		fmt.Fprintln(c.Stderr, errNotRunningQuiet)
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal weave router pid %d: %w", pid, err)
	}
	if !c.waitGone(ctx, pid, c.StopTimeout) {
		c.Logger.Warn("weave router ignored SIGTERM, killing it", "pid", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !c.waitGone(ctx, pid, 5*time.Second) {
			return fmt.Errorf("stop weave router pid %d: still running after SIGKILL", pid)
		}
	}
	if err := os.Remove(c.pidFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove pid file %s: %w", c.pidFile(), err)
	}
	return nil
}

// waitGone polls until pid has exited (reaping it if it is our child).
func (c *cmd) waitGone(ctx context.Context, pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		exited(pid)
		if !c.alive(pid) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(c.PollInterval) // no event for a foreign process's exit
	}
}
