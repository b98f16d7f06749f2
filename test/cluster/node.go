//go:build linux

package cluster

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
)

// Node is one node: a network namespace with containerd, a kubelet and
// kube-proxy in a private mount namespace.
type Node struct {
	Name   string // Node name, "node1"
	NS     string // network namespace
	IP     string // InternalIP on the underlay
	Dir    string // its state: containerd, kubelet, the host paths' contents
	Socket string // containerd's CRI socket

	c          *Cluster
	holder     *exec.Cmd // keeps the mount namespace (and its bind mounts)
	mntNS      string    // /proc/<holder>/ns/mnt
	cgroupRoot string
	containerd *Proc
	kubelet    *Proc
	kubeProxy  *Service // restarted when it exits, as systemd or a DaemonSet would
}

// cgroupV1 are the v1 hierarchies the kubelet and runc use here.
func cgroupV1() []string {
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	var hs []string
	for _, e := range ents {
		if e.Name() == "unified" {
			continue
		}
		if st, err := os.Lstat(filepath.Join("/sys/fs/cgroup", e.Name())); err == nil && st.IsDir() {
			hs = append(hs, e.Name())
		}
	}
	return hs
}

func (c *Cluster) addNode(i int) (*Node, error) {
	n := &Node{c: c, Name: "node" + strconv.Itoa(i), NS: fmt.Sprintf("%s-n%d", c.Prefix, i),
		IP: fmt.Sprintf("%s.%d", underlayNet, i), Dir: filepath.Join(c.Dir, "node"+strconv.Itoa(i))}
	n.Socket = filepath.Join(n.Dir, "containerd.sock")
	n.cgroupRoot = "/" + c.Prefix + "-" + n.Name
	veth := fmt.Sprintf("%s-v%d", c.Prefix, i)
	for _, args := range [][]string{
		{"netns", "add", n.NS},
		{"link", "add", veth, "netns", c.Underlay, "type", "veth", "peer", "name", "eth0", "netns", n.NS},
		{"-n", c.Underlay, "link", "set", veth, "master", "br0", "up"},
		{"-n", n.NS, "link", "set", "lo", "up"},
		{"-n", n.NS, "addr", "add", n.IP + "/24", "dev", "eth0"},
		{"-n", n.NS, "link", "set", "eth0", "up"},
		{"-n", n.NS, "route", "add", "default", "via", ControlIP},
	} {
		if err := run("ip", args...); err != nil {
			return n, err
		}
	}
	// A real node forwards (pods reach Services and the outside through it).
	if err := run("nsenter", "--net="+nsPath(n.NS), "sh", "-c", "echo 1 >/proc/sys/net/ipv4/ip_forward"); err != nil {
		return n, err
	}
	if err := n.makeCgroups(); err != nil {
		return n, err
	}
	if err := n.makeMountNS(); err != nil {
		return n, err
	}
	if err := n.startContainerd(); err != nil {
		return n, err
	}
	for _, img := range c.images {
		if err := n.ImportImage(img); err != nil {
			return n, err
		}
	}
	if err := n.startKubelet(); err != nil {
		return n, err
	}
	if err := n.startKubeProxy(); err != nil {
		return n, err
	}
	return n, nil
}

// cgroupDirs are the node's cgroup roots, in every hierarchy.
func (n *Node) cgroupDirs() []string {
	var ds []string
	for _, h := range append(cgroupV1(), "unified") {
		ds = append(ds, filepath.Join("/sys/fs/cgroup", h, n.cgroupRoot))
	}
	return ds
}

// makeCgroups creates the kubelet's cgroupRoot in every v1 hierarchy
// (name=systemd included), with cpuset's cpus and mems from the parent.
func (n *Node) makeCgroups() error {
	for _, h := range cgroupV1() {
		d := filepath.Join("/sys/fs/cgroup", h, n.cgroupRoot)
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("cluster: cgroup %s: %w", d, err)
		}
		if h == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, f), v, 0o644); err != nil {
					return fmt.Errorf("cluster: %s/%s: %w", d, f, err)
				}
			}
		}
	}
	return nil
}

// removeCgroups removes the node's cgroup trees, deepest first.
func (n *Node) removeCgroups() {
	for _, root := range n.cgroupDirs() {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			for range 20 {
				if err := syscall.Rmdir(d); err == nil || os.IsNotExist(err) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
}

// cgroupPids are the processes in the node's cgroup trees (its pods).
func (n *Node) cgroupPids() []int {
	var pids []int
	seen := map[int]bool{}
	for _, root := range n.cgroupDirs() {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			f, err := os.Open(p)
			if err != nil {
				return nil
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if pid, err := strconv.Atoi(sc.Text()); err == nil && !seen[pid] {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// HostPath is where host path p (one of the bind-mounted hostPaths) of the
// node is, seen from the machine.
func (n *Node) HostPath(p string) string {
	return filepath.Join(n.Dir, "host", strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "_"))
}

// makeMountNS starts the holder of the node's mount namespace: private
// propagation, each host path a bind mount of a directory under n.Dir.
func (n *Node) makeMountNS() error {
	var script strings.Builder
	script.WriteString("set -e\n")
	for _, p := range hostPaths {
		if err := n.c.mkdirs(p); err != nil {
			return err
		}
		src := n.HostPath(p)
		if err := os.MkdirAll(src, 0o755); err != nil {
			return err
		}
		fmt.Fprintf(&script, "mount --bind %s %s\n", src, p)
	}
	// The DaemonSet mounts /lib/modules (read-only): a machine without
	// one (a kernel with no modules) gets an empty mount point, removed
	// at Stop.
	if err := n.c.mkdirs("/lib/modules"); err != nil {
		return err
	}
	// CNI plugins every node has besides ours (containerd's CRI needs
	// loopback; weave's conflist chains portmap).
	for _, p := range []string{"loopback", "portmap"} {
		if err := copyFile(filepath.Join("/usr/lib/cni", p), filepath.Join(n.HostPath("/opt/cni/bin"), p)); err != nil {
			return err
		}
	}
	// Each node is a machine of its own: its own machine id (systemd's and
	// D-Bus's copy), which the router derives its first peer name from as
	// Weave Net 2.8.1 does, and kubelet reports. Shared, every node's
	// router would take the same name.
	if err := n.identity(&script); err != nil {
		return err
	}
	script.WriteString("echo ready\nexec sleep 2147483647\n")
	n.holder = exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script.String())
	n.holder.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	out, err := n.holder.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	n.holder.Stderr = &stderr
	if err := n.holder.Start(); err != nil {
		return fmt.Errorf("cluster: mount namespace of %s: %w", n.Name, err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		_ = n.holder.Wait()
		return fmt.Errorf("cluster: mount namespace of %s: %s", n.Name, stderr.String())
	}
	n.mntNS = fmt.Sprintf("/proc/%d/ns/mnt", n.holder.Process.Pid)
	return nil
}

// identity writes a random machine id for the node under n.Dir and adds
// to script the bind mounts that show it at the machine's own id paths
// (those that exist: a mount needs its mount point).
func (n *Node) identity(script *strings.Builder) error {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	id := []byte(hex.EncodeToString(raw) + "\n")
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		src := filepath.Join(n.Dir, "id", strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "_"))
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(src, id, 0o444); err != nil {
			return err
		}
		fmt.Fprintf(script, "mount --bind %s %s\n", src, p)
	}
	return nil
}

// mkdirs makes directory p and its missing parents on the machine,
// recording each for Stop to remove (when still empty).
func (c *Cluster) mkdirs(p string) error {
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := c.mkdirs(filepath.Dir(p)); err != nil {
		return err
	}
	if err := os.Mkdir(p, 0o755); err != nil && !os.IsExist(err) {
		return fmt.Errorf("cluster: mount point %s: %w", p, err)
	}
	c.created = append(c.created, p)
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("cluster: %w (Debian package containernetworking-plugins)", err)
	}
	return os.WriteFile(dst, b, 0o755)
}

func (n *Node) exited() error {
	for _, p := range []*Proc{n.containerd, n.kubelet} {
		if err := p.Exited(); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	if err := n.kubeProxy.Exited(); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}

// KillPods kills every process of the node's pods (host-network ones, the
// weave-net pod's, included), as a machine losing power would; containerd
// and the kubelet see them exit.
func (n *Node) KillPods() {
	for range 50 {
		pids := n.cgroupPids()
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			killPid(p)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readCmdline is /proc/pid/cmdline with spaces between the arguments.
func readCmdline(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")), err
}

// stop ends the node: kubelet and kube-proxy, the pods (by cgroup),
// containerd, then everything left in its network namespace (shims,
// host-network containers, the mount namespace holder).
func (n *Node) stop() {
	n.kubelet.Stop(5 * time.Second)
	n.kubeProxy.Stop(5 * time.Second)
	n.KillPods()
	n.containerd.Stop(5 * time.Second)
	killNS(n.NS)
	if n.holder != nil && n.holder.Process != nil {
		_ = n.holder.Process.Kill()
		_ = n.holder.Wait()
	}
	_ = run("ip", "netns", "del", n.NS)
}

// Dial connects from inside the node's network namespace (as a program
// on the node would).
func (n *Node) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := netns.Do(nsPath(n.NS), func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// WeaveGet GETs path from the node's weave router (127.0.0.1:6784).
func (n *Node) WeaveGet(ctx context.Context, path string) ([]byte, error) {
	hc := &http.Client{Transport: &http.Transport{DialContext: n.Dial, DisableKeepAlives: true}, Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:6784"+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: GET %s: %w", n.Name, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: GET %s: %s: %s", n.Name, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return b, err
}

// Exec runs argv in the node's network namespace (nsenter --net).
func (n *Node) Exec(ctx context.Context, argv ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + nsPath(n.NS), "--"}, argv...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %s: %w: %s", n.Name, strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Diagnose is what to read after a failure: whether the node's programs
// still run, and the last lines kube-proxy and the kubelet logged.
func (n *Node) Diagnose() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s diagnostics:", n.Name)
	if err := n.exited(); err != nil {
		fmt.Fprintf(&b, "\n  %v", err)
	}
	if p := n.kubeProxy; p != nil {
		fmt.Fprintf(&b, "\n  --- %s, restarted %d times (last 12 lines of %s):\n%s", p.Name, p.Restarts(), p.Log, p.Tail(12))
	}
	if p := n.kubelet; p != nil {
		fmt.Fprintf(&b, "\n  --- %s (last 12 lines of %s):\n%s", p.Name, p.Log, p.Tail(12))
	}
	return b.String()
}
