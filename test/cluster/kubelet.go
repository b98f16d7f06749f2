//go:build linux

package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// PauseImage is the pod sandbox image every node has (built by
// buildImages); BoxImage is busybox, for test pods.
const (
	PauseImage = "localhost/pause:1"
	BoxImage   = "localhost/box:1"
)

const containerdConfig = `version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "%[2]s"
[ttrpc]
  address = "%[2]s.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "%[1]s/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[3]s"
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "%[1]s/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
    max_conf_num = 1
`

// The kubelet of v1.37 on cgroup v1 (failCgroupV1: false), as root
// without CAP_SYS_RESOURCE, sharing a machine with other kubelets.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]s
enforceNodeAllocatable: []
failSwapOn: false
localStorageCapacityIsolation: false
containerRuntimeEndpoint: unix://%[2]s
address: %[3]s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
podLogsDir: /var/log/pods
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
clusterDomain: cluster.local
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
`

func (n *Node) startContainerd() error {
	cfg := filepath.Join(n.Dir, "containerd.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, containerdConfig, n.Dir, n.Socket, PauseImage), 0o644); err != nil {
		return err
	}
	var err error
	if n.containerd, err = n.c.start(n.Name+"-containerd", n.NS, n.mntNS, nil, "containerd", "--config", cfg); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := n.containerd.Exited(); err != nil {
			return err
		}
		if _, err := n.ctr(context.Background(), "version"); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: %s's containerd not answering on %s after 60s:\n%s", n.Name, n.Socket, n.containerd.Tail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ctr runs ctr against the node's containerd, namespace k8s.io (the CRI's).
func (n *Node) ctr(ctx context.Context, args ...string) (string, error) {
	args = append([]string{"--address", n.Socket, "--namespace", "k8s.io"}, args...)
	out, err := exec.CommandContext(ctx, "ctr", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w: %s", strings.Join(args[4:], " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// ImportImage imports an image archive (docker-archive / OCI) into the
// node's containerd, as an operator without a registry does.
func (n *Node) ImportImage(archive string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := n.ctr(ctx, "images", "import", archive)
	return err
}

// ImportImage imports archive into every node.
func (c *Cluster) ImportImage(archive string) error {
	for _, n := range c.Nodes {
		if err := n.ImportImage(archive); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
	}
	return nil
}

func (n *Node) startKubelet() error {
	cfg := filepath.Join(n.Dir, "kubelet.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, kubeletConfig, n.cgroupRoot, n.Socket, n.IP), 0o644); err != nil {
		return err
	}
	var err error
	n.kubelet, err = n.c.start(n.Name+"-kubelet", n.NS, n.mntNS, nil, n.c.Bins.Kubelet,
		"--config="+cfg, "--kubeconfig="+n.c.Kubeconfig, "--root-dir=/var/lib/kubelet",
		"--cert-dir="+filepath.Join(n.Dir, "kubelet-pki"), "--hostname-override="+n.Name,
		"--node-ip="+n.IP, "--v=1")
	return err
}

// RestartKubelet kills the node's kubelet (SIGKILL, as a crash) and
// starts it again.
func (n *Node) RestartKubelet() error {
	n.kubelet.Kill()
	return n.startKubelet()
}

// KubeletLog is the kubelet's log file.
func (n *Node) KubeletLog() string { return n.kubelet.Log }

// iptablesPath is a PATH with the node's iptables backend first: a
// directory where iptables, iptables-save, iptables-restore (and ip6*)
// are that backend's.
func (n *Node) iptablesPath() (string, error) {
	d := filepath.Join(n.Dir, "iptables-"+n.c.Opts.IPTables)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	for _, fam := range []string{"iptables", "ip6tables"} {
		for _, suf := range []string{"", "-save", "-restore"} {
			target, err := exec.LookPath(fam + "-" + n.c.Opts.IPTables + suf)
			if err != nil {
				return "", fmt.Errorf("cluster: %w", err)
			}
			link := filepath.Join(d, fam+suf)
			_ = os.Remove(link)
			if err := os.Symlink(target, link); err != nil {
				return "", err
			}
		}
	}
	return "PATH=" + d + ":" + os.Getenv("PATH"), nil
}

func (n *Node) startKubeProxy() error {
	path, err := n.iptablesPath()
	if err != nil {
		return err
	}
	name := n.Name + "-kube-proxy"
	n.kubeProxy, err = n.c.startService(name, func() (*Proc, error) {
		return n.c.start(name, n.NS, n.mntNS, []string{path}, n.c.Bins.KubeProxy,
			"--kubeconfig="+n.c.Kubeconfig, "--hostname-override="+n.Name, "--proxy-mode=iptables",
			"--cluster-cidr="+PodRange, "--conntrack-max-per-core=0",
			"--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
			"--healthz-bind-address=127.0.0.1:10256", "--metrics-bind-address=127.0.0.1:10249", "--v=1")
	})
	return err
}
