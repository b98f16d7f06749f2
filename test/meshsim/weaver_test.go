package meshsim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/api"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/liveness"
	"github.com/seedf75a49c6/weave/test/meshsim"
	"github.com/weaveworks/mesh"
)

// weaverName is the real router's peer name: outside the Sim's aa:... range.
const weaverName = "ee:00:00:00:00:01"

// realWeaver is a real weaver process joined to a Sim (MESHSIM_WEAVER).
type realWeaver struct {
	t    *testing.T
	s    *meshsim.Sim
	name mesh.PeerName
	cmd  *exec.Cmd
	http string
	log  string
	// the weaver's own answer is asked at most every 2 s (a /report of
	// hundreds of peers is work for the process we measure)
	asked  time.Time
	answer string
}

// weaverBinary returns $MESHSIM_WEAVER when a real router should join the
// run of n routers ($MESHSIM_REAL_AT, default 200), else "". It refuses to
// start one outside the dedicated network namespace $MESHSIM_NETNS
// (test/scale.sh makes one): weaver creates a bridge and iptables rules
// wherever it runs.
func weaverBinary(t *testing.T, n int) string {
	path := os.Getenv("MESHSIM_WEAVER")
	if path == "" {
		return ""
	}
	at := 200
	if v, err := strconv.Atoi(os.Getenv("MESHSIM_REAL_AT")); err == nil {
		at = v
	}
	if n != at {
		return ""
	}
	netnstest.RequireRoot(t)
	ns := os.Getenv("MESHSIM_NETNS")
	self, err1 := os.Stat("/proc/self/ns/net")
	named, err2 := os.Stat(netnstest.NSPath(ns))
	if ns == "" || err1 != nil || err2 != nil || !os.SameFile(self, named) {
		t.Fatalf("MESHSIM_WEAVER: run inside the dedicated network namespace $MESHSIM_NETNS (%q; test/scale.sh REAL=1 makes one), not the host's: %v %v", ns, err1, err2)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("MESHSIM_WEAVER: %v (make build)", err)
	}
	return path
}

// startWeaver launches the weaver as peer index len(s.Peers) would be
// (its own loopback address, the shared ports), with the scale
// connection limit, discovery setting and the spread initial peers, as
// `weave launch` would.
func startWeaver(t *testing.T, s *meshsim.Sim, bin string, ipam bool, rng *rand.Rand) *realWeaver {
	t.Helper()
	k := len(s.Peers)
	ip := s.LoopbackIP(k)
	mport, lport := s.Ports()
	hport, err := meshsim.FreePort(ip)
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := net.JoinHostPort(ip, strconv.Itoa(hport))
	dir := t.TempDir()
	args := []string{
		"--name", weaverName, "--nickname", "real", "--host", ip, "--port", strconv.Itoa(mport),
		"--liveness-port", strconv.Itoa(lport), "--http-addr", httpAddr,
		"--data-dir", filepath.Join(dir, "data"), "--run-dir", filepath.Join(dir, "run"),
		"--docker-api", "", "--no-dns", "--no-fastdp", "--no-plugin", "--resolv-conf", "",
		"--conn-limit", strconv.Itoa(connLimit()),
	}
	if !discovery() {
		args = append(args, "--no-discovery")
	}
	if ipam {
		args = append(args, "--ipalloc-init", "seed="+meshsim.PeerName(0).String())
	} else {
		args = append(args, "--ipalloc-range", "")
	}
	for _, j := range meshsim.NewcomerTargets(k, rng) {
		args = append(args, s.Peers[j].Addr)
	}
	for _, d := range []string{"data", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(dir, "weaver.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start weaver: %v", err)
	}
	logf.Close()
	name, _ := mesh.PeerNameFromString(weaverName)
	w := &realWeaver{t: t, s: s, name: name, cmd: cmd, http: httpAddr, log: logPath}
	t.Cleanup(w.stop)
	t.Logf("real weaver pid %d on %s: %s", cmd.Process.Pid, ip, strings.Join(args, " "))
	return w
}

func (w *realWeaver) stop() {
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = w.cmd.Process.Kill()
		<-done
	}
	if w.t.Failed() {
		b, _ := os.ReadFile(w.log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		w.t.Logf("weaver.log (last 30 lines):\n%s", strings.Join(lines[max(0, len(lines)-30):], "\n"))
	}
}

// problem is "" when every live simulated peer routes to the weaver and
// sees it alive, and the weaver routes to every live simulated peer.
func (w *realWeaver) problem() string {
	if w.cmd.ProcessState != nil {
		return "weaver exited"
	}
	alive := w.s.Alive()
	for _, p := range alive {
		if _, ok := p.Mesh.Routes.Unicast(w.name); !ok {
			return fmt.Sprintf("%s has no route to the weaver", p.NickName)
		}
		if st := p.Live.Get(weaverName).State; st == liveness.Dead || st == liveness.Unknown {
			return fmt.Sprintf("%s sees the weaver %v", p.NickName, st)
		}
	}
	if time.Since(w.asked) < 2*time.Second {
		return w.answer
	}
	w.asked = time.Now()
	w.answer = w.reportProblem()
	return w.answer
}

func (w *realWeaver) reportProblem() string {
	var rep struct {
		Router struct{ UnicastRoutes []struct{ Dest, Via string } }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body, err := api.NewClient(api.Config{Addr: w.http}).Report(ctx)
	if err != nil {
		return fmt.Sprintf("weaver /report: %v", err)
	}
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		return fmt.Sprintf("weaver /report: %v", err)
	}
	routes := map[string]bool{}
	for _, r := range rep.Router.UnicastRoutes {
		routes[r.Dest] = true
	}
	for _, q := range w.s.Peers {
		if routes[q.Name.String()] == w.s.IsKilled(q) {
			return fmt.Sprintf("weaver route to %s: %v (killed %v)", q.NickName, routes[q.Name.String()], w.s.IsKilled(q))
		}
	}
	return ""
}

// memory returns the weaver's VmRSS and VmHWM.
func (w *realWeaver) memory() (rss, hwm uint64) {
	rss, hwm, err := meshsim.ProcStatus(strconv.Itoa(w.cmd.Process.Pid))
	if err != nil {
		w.t.Fatalf("weaver memory: %v", err)
	}
	return rss, hwm
}
