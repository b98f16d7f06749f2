//go:build linux

package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/test/k8s"
)

// Addresses of the cluster's underlay (every cluster has its own
// namespaces, so clusters do not clash).
const (
	underlayNet  = "192.168.100"
	ControlIP    = underlayNet + ".254" // the API server, in the underlay namespace
	ServiceRange = "10.0.0.0/24"
	// PodRange is the weave-net DaemonSet's default IPALLOC_RANGE, which
	// kube-proxy is told is the cluster's (--cluster-cidr).
	PodRange = "10.32.0.0/12"
)

// Options configure a cluster.
type Options struct {
	Nodes int // default 3
	// IPTables is the iptables backend of the nodes' plain `iptables`
	// (what kube-proxy runs): "nft" (default, Debian's default) or "legacy".
	IPTables string
	// Dir holds everything (default: a new temporary directory).
	Dir string
	// Logf reports progress (default: none).
	Logf func(format string, args ...any)
}

// Cluster is a running cluster.
type Cluster struct {
	Opts       Options
	Dir        string
	Prefix     string // unique per cluster: namespace and cgroup names start with it
	Underlay   string // namespace of the control plane and the underlay bridge
	API        *k8s.Server
	Kubeconfig string // admin kubeconfig (reachable from the underlay namespace)
	Nodes      []*Node
	Bins       k8s.ClusterBins

	procs   []*Proc // control plane besides the API server
	images  []string
	created []string          // mount points made on the machine, removed at Stop
	sysctls map[string]string // machine-wide values before the kubelets changed them
	stopped sync.Once
}

// kubeletSysctls are the machine-wide kernel settings a kubelet sets
// (setupKernelTunables): Stop puts their old values back.
var kubeletSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// hostPaths are the paths each node sees as its own: the DaemonSet's and
// CNI's host paths, the kubelet's and containerd's fixed ones.
var hostPaths = []string{
	"/var/lib/weave", "/opt/cni/bin", "/etc/cni/net.d", "/var/lib/cni",
	"/var/lib/kubelet", "/var/log", "/run/containerd",
}

// StartTimeout bounds Start.
const StartTimeout = 5 * time.Minute

// RequiredTools are the programs Start needs on PATH.
var RequiredTools = []string{"ip", "nsenter", "unshare", "mount", "containerd", "containerd-shim-runc-v2", "ctr", "runc", "iptables", "iptables-legacy", "iptables-nft", "busybox"}

// Start brings up the control plane and o.Nodes nodes, each Registered
// with the API server (NotReady until a CNI network is installed: that is
// the DaemonSet's job). On error everything started is stopped.
func Start(o Options) (c *Cluster, err error) {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.IPTables == "" {
		o.IPTables = "nft"
	}
	if o.IPTables != "nft" && o.IPTables != "legacy" {
		return nil, fmt.Errorf("cluster: iptables backend %q: want nft or legacy", o.IPTables)
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("cluster: needs root")
	}
	for _, tool := range RequiredTools {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("cluster: no %s on PATH (make deps installs it)", tool)
		}
	}
	SweepStale()
	bins, err := k8s.FindClusterBins()
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	c = &Cluster{Opts: o, Bins: bins, Prefix: "wk" + hex.EncodeToString(b), sysctls: map[string]string{}}
	c.Underlay = c.Prefix + "-u"
	if c.Dir = o.Dir; c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "weave-cluster-"); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	t0 := time.Now()
	if err := c.saveSysctls(); err != nil {
		return c, err
	}
	if err := c.makeUnderlay(); err != nil {
		return c, err
	}
	if err := c.startControlPlane(); err != nil {
		return c, err
	}
	o.Logf("cluster: control plane up in %v", time.Since(t0).Round(time.Millisecond))
	if err := c.buildImages(); err != nil {
		return c, err
	}
	for i := 1; i <= o.Nodes; i++ {
		n, err := c.addNode(i)
		if n != nil {
			c.Nodes = append(c.Nodes, n)
		}
		if err != nil {
			return c, err
		}
	}
	if err := c.waitNodesRegistered(StartTimeout); err != nil {
		return c, err
	}
	o.Logf("cluster: %d nodes registered, %v after start", o.Nodes, time.Since(t0).Round(time.Millisecond))
	return c, nil
}

func (c *Cluster) saveSysctls() error {
	for _, k := range kubeletSysctls {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			continue // not in this kernel
		}
		c.sysctls[k] = strings.TrimSpace(string(v))
	}
	return nil
}

func (c *Cluster) restoreSysctls() {
	for k, v := range c.sysctls {
		_ = os.WriteFile(filepath.Join("/proc/sys", k), []byte(v+"\n"), 0o644)
	}
}

// run runs a command, failing with its output.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// nsPath is the bind mount of a named network namespace.
func nsPath(ns string) string { return filepath.Join("/run/netns", ns) }

func (c *Cluster) makeUnderlay() error {
	u := c.Underlay
	for _, args := range [][]string{
		{"netns", "add", u},
		{"-n", u, "link", "set", "lo", "up"},
		{"-n", u, "link", "add", "br0", "type", "bridge"},
		{"-n", u, "addr", "add", ControlIP + "/24", "dev", "br0"},
		{"-n", u, "link", "set", "br0", "up"},
	} {
		if err := run("ip", args...); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) startControlPlane() error {
	api, err := k8s.NewWithOptions(k8s.Options{NetNS: c.Underlay, Address: ControlIP, Cluster: true})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	c.API = api
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := k8s.WriteKubeconfigFile(c.Kubeconfig, api.AdminConfig()); err != nil {
		return err
	}
	ca := filepath.Join(api.Dir, "certs", "apiserver.crt")
	cm, err := c.start("kube-controller-manager", c.Underlay, "", nil, c.Bins.ControllerManager,
		"--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--secure-port=0", "--controllers=*",
		"--service-account-private-key-file="+filepath.Join(api.Dir, "sa.key"), "--root-ca-file="+ca,
		"--use-service-account-credentials=false", "--allocate-node-cidrs=false",
		"--service-cluster-ip-range="+ServiceRange, "--node-monitor-grace-period=20s", "--v=1")
	if err != nil {
		return err
	}
	sched, err := c.start("kube-scheduler", c.Underlay, "", nil, c.Bins.Scheduler,
		"--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--secure-port=0", "--v=1")
	if err != nil {
		return err
	}
	c.procs = append(c.procs, cm, sched)
	return nil
}

// Client is an admin clientset.
func (c *Cluster) Client() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(c.API.AdminConfig())
}

// Kubectl runs kubectl (the v1.37.2 one bins.sh built) as admin from the
// underlay namespace, with input on stdin when not nil.
func (c *Cluster) Kubectl(ctx context.Context, stdin []byte, args ...string) (string, error) {
	args = append([]string{"--net=" + nsPath(c.Underlay), c.Bins.Kubectl, "--kubeconfig=" + c.Kubeconfig}, args...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(c.Dir, "kubecache"))
	if stdin != nil {
		cmd.Stdin = strings.NewReader(string(stdin))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args[3:], " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func (c *Cluster) waitNodesRegistered(timeout time.Duration) error {
	cl, err := c.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		nodes, err := cl.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil && len(nodes.Items) == len(c.Nodes) {
			return nil
		}
		for _, n := range c.Nodes {
			if e := n.exited(); e != nil {
				return e
			}
		}
		select {
		case <-ctx.Done():
			var tails []string
			for _, n := range c.Nodes {
				tails = append(tails, n.Name+" kubelet:\n"+n.kubelet.Tail(15))
			}
			return fmt.Errorf("cluster: nodes not registered after %v (%v)\n%s", timeout, err, strings.Join(tails, "\n"))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Stop tears everything down (idempotent): processes, namespaces, cgroups,
// directories, and the machine-wide settings the kubelets changed.
func (c *Cluster) Stop() {
	c.stopped.Do(func() {
		var wg sync.WaitGroup
		for _, n := range c.Nodes {
			wg.Add(1)
			go func() { defer wg.Done(); n.stop() }()
		}
		wg.Wait()
		for i := len(c.procs) - 1; i >= 0; i-- {
			c.procs[i].Stop(10 * time.Second)
		}
		if c.API != nil {
			c.API.Stop()
		}
		killNS(c.Underlay)
		_ = run("ip", "netns", "del", c.Underlay)
		for _, n := range c.Nodes {
			n.removeCgroups()
		}
		c.restoreSysctls()
		for i := len(c.created) - 1; i >= 0; i-- {
			_ = os.Remove(c.created[i]) // only when still empty
		}
		if keep := os.Getenv("WEAVE_CLUSTER_LOGS"); keep != "" && c.Dir != "" {
			// Where the logs of every process go when the cluster ends
			// (the temporary directory goes): to read after a failure.
			if err := copyDir(filepath.Join(c.Dir, "logs"), filepath.Join(keep, filepath.Base(c.Dir))); err != nil {
				fmt.Fprintf(os.Stderr, "cluster: keep logs in %s: %v\n", keep, err)
			}
		}
		if c.Opts.Dir == "" && c.Dir != "" {
			if err := os.RemoveAll(c.Dir); err != nil {
				time.Sleep(time.Second)
				_ = os.RemoveAll(c.Dir)
			}
		}
	})
}

// killNS kills every process in network namespace ns and waits (bounded)
// for them to be gone.
func killNS(ns string) {
	for range 50 {
		pids, err := netnstest.Pids(ns)
		if err != nil || len(pids) == 0 {
			return
		}
		for _, p := range pids {
			killPid(p)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Leftovers lists what of the cluster is still on the machine after Stop:
// processes, network namespaces, cgroups, mount points, the directory.
func (c *Cluster) Leftovers() []string {
	var left []string
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), c.Prefix) {
			left = append(left, "netns "+e.Name())
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), c.Dir) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if pid != os.Getpid() {
				left = append(left, fmt.Sprintf("process %d: %s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
			}
		}
	}
	for _, n := range c.Nodes {
		for _, d := range n.cgroupDirs() {
			if _, err := os.Stat(d); err == nil {
				left = append(left, "cgroup "+d)
			}
		}
	}
	// A mount point we made stays only when someone else (another test on
	// the machine) wrote into it meanwhile: ours are bind mounts.
	for _, p := range c.created {
		if ents, err := os.ReadDir(p); err == nil && len(ents) == 0 {
			left = append(left, "directory "+p)
		}
	}
	if _, err := os.Stat(c.Dir); err == nil && c.Opts.Dir == "" {
		left = append(left, "directory "+c.Dir)
	}
	for k, v := range c.sysctls {
		if b, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil && strings.TrimSpace(string(b)) != v {
			left = append(left, fmt.Sprintf("sysctl %s=%s (was %s)", k, strings.TrimSpace(string(b)), v))
		}
	}
	return left
}

// staleAge is how old a stale cluster's namespaces must be.
var staleAge = 2 * time.Minute

// stalePrefix matches the namespaces Start makes ("wk" + 6 hex digits).
var stalePrefix = regexp.MustCompile(`^(wk[0-9a-f]{6})-(u|n[0-9]+)$`)

// SweepStale removes what clusters whose process died without Stop left:
// for every cluster prefix none of whose namespaces holds a process (nor
// was made in the last 2 minutes), its namespaces and cgroups. A cluster
// still running is left alone. Start calls it.
func SweepStale() {
	ents, _ := os.ReadDir("/run/netns")
	byPrefix := map[string][]string{}
	for _, e := range ents {
		if m := stalePrefix.FindStringSubmatch(e.Name()); m != nil {
			byPrefix[m[1]] = append(byPrefix[m[1]], e.Name())
		}
	}
	for prefix, nss := range byPrefix {
		alive := false
		for _, ns := range nss {
			// A cluster being started has namespaces before processes.
			if st, err := os.Stat(nsPath(ns)); err != nil || time.Since(st.ModTime()) < staleAge {
				alive = true
			}
			if pids, err := netnstest.Pids(ns); err != nil || len(pids) > 0 {
				alive = true
			}
		}
		if alive {
			continue
		}
		for _, ns := range nss {
			_ = run("ip", "netns", "del", ns)
		}
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + prefix + "-node*")
		for _, d := range dirs {
			n := &Node{cgroupRoot: "/" + filepath.Base(d)}
			n.removeCgroups()
		}
	}
}

// copyDir copies the regular files of from (one level) into to.
func copyDir(from, to string) error {
	ents, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
