//go:build linux

package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// Proc is a process of the cluster, its output in Log.
type Proc struct {
	Name string
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// start runs path args in network namespace ns (and mount namespace
// mntNS, a /proc/<pid>/ns/mnt, when set), with env added: only those namespaces
// change, so /sys and the cgroup mounts stay visible (`ip netns exec`
// would remount /sys and hide them).
func (c *Cluster) start(name, ns string, mntNS string, env []string, path string, args ...string) (*Proc, error) {
	logDir := filepath.Join(c.Dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	p := &Proc{Name: name, Log: filepath.Join(logDir, name+".log"), done: make(chan struct{})}
	log, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	nsArgs := []string{"--net=" + nsPath(ns)}
	if mntNS != "" {
		nsArgs = append(nsArgs, "--mount="+mntNS)
	}
	p.cmd = exec.Command("nsenter", append(append(nsArgs, "--", path), args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cluster: start %s: %w", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	return p, nil
}

// Exited is nil while p runs, else how it ended.
func (p *Proc) Exited() error {
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%v); log tail:\n%s", p.Name, p.err, p.Tail(20))
	default:
		return nil
	}
}

// Pid is the process id (nsenter execs the program: same process).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM, then SIGKILL after grace, and waits.
func (p *Proc) Stop(grace time.Duration) {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Kill sends SIGKILL and waits.
func (p *Proc) Kill() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Tail is the last n lines of p's log.
func (p *Proc) Tail(n int) string {
	if p == nil {
		return ""
	}
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return err.Error()
	}
	return netnstest.Tail(string(b), n)
}

// killPid sends SIGKILL to pid and reaps it if it is our child.
func killPid(pid int) {
	_ = syscall.Kill(pid, syscall.SIGKILL)
	var st syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &st, syscall.WNOHANG, nil)
}

// Service is a process kept running as systemd's Restart=always (or a
// DaemonSet) keeps a node agent: started again a second after it exits,
// until Stop. kube-proxy counts on that: it exits on purpose when its
// node's addresses change, which happens when it starts before the
// kubelet has registered the Node (it then assumes loopback and exits
// once the Node appears).
type Service struct {
	Name string
	Log  string

	start func() (*Proc, error)
	delay time.Duration // before a restart
	stop  chan struct{}
	done  chan struct{}

	mu       sync.Mutex
	cur      *Proc
	restarts int
	err      error // why it is no longer restarted
}

// serviceMaxRestarts bounds restarts: a program that exits at once every
// time is broken, not restarting.
const serviceMaxRestarts = 10

func (c *Cluster) startService(name string, start func() (*Proc, error)) (*Service, error) {
	return startService(name, time.Second, start)
}

func startService(name string, delay time.Duration, start func() (*Proc, error)) (*Service, error) {
	p, err := start()
	if err != nil {
		return nil, err
	}
	s := &Service{Name: name, Log: p.Log, start: start, delay: delay, cur: p, stop: make(chan struct{}), done: make(chan struct{})}
	go s.supervise()
	return s, nil
}

func (s *Service) supervise() {
	defer close(s.done)
	for {
		s.mu.Lock()
		p := s.cur
		s.mu.Unlock()
		select {
		case <-s.stop:
			return
		case <-p.done:
		}
		s.mu.Lock()
		s.restarts++
		if s.restarts > serviceMaxRestarts {
			s.err = fmt.Errorf("%s exited %d times; last: %w", s.Name, s.restarts, p.Exited())
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		select {
		case <-s.stop:
			return
		case <-time.After(s.delay):
		}
		np, err := s.start()
		s.mu.Lock()
		if err != nil {
			s.err = fmt.Errorf("%s: restart: %w", s.Name, err)
			s.mu.Unlock()
			return
		}
		s.cur = np
		s.mu.Unlock()
	}
}

// Restarts is how often s was started again.
func (s *Service) Restarts() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Exited is nil while s is running or being restarted, else why it gave up.
func (s *Service) Exited() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Stop ends the supervision, then the process (SIGTERM, SIGKILL after grace).
func (s *Service) Stop(grace time.Duration) {
	if s == nil {
		return
	}
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	s.mu.Lock()
	p := s.cur
	s.mu.Unlock()
	p.Stop(grace)
}

// Tail is the last n lines of the log (every run of the process appends to it).
func (s *Service) Tail(n int) string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	p := s.cur
	s.mu.Unlock()
	return p.Tail(n)
}
