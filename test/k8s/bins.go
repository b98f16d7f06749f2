package k8s

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

//go:embed bins.sh
var binsScript string

// Bins are the paths of the server binaries.
type Bins struct {
	APIServer, Etcd string
}

var (
	binsOnce sync.Once
	binsVal  Bins
	binsErr  error
)

// FindBins returns the kube-apiserver and etcd binaries: from
// $WEAVE_K8S_BINS when set, else from the cache dir, building them there
// with bins.sh when missing (once per process; bins.sh locks against other
// processes doing the same).
func FindBins() (Bins, error) {
	binsOnce.Do(func() { binsVal, binsErr = findBins() })
	return binsVal, binsErr
}

func findBins() (Bins, error) {
	dir, err := binDir("server")
	if err != nil {
		return Bins{}, err
	}
	return checkBins(dir)
}

// binDir is $WEAVE_K8S_BINS, else the cache dir's bin after running
// `bins.sh set` (a fast no-op when the binaries of its versions are there).
func binDir(set string) (string, error) {
	if dir := os.Getenv("WEAVE_K8S_BINS"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command("sh", "-c", binsScript, "bins.sh", set)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build the Kubernetes binaries with `test/k8s/bins.sh %s` (`make k8s-bins`): %w", set, err)
	}
	return filepath.Join(CacheDir(), "bin"), nil
}

// ClusterBins are the binaries of a real cluster (test/cluster): the
// server's, and what its control plane and nodes run, all v1.37.2.
type ClusterBins struct {
	Bins
	Kubectl, Kubelet, KubeProxy, Scheduler, ControllerManager string
}

var (
	clusterOnce sync.Once
	clusterVal  ClusterBins
	clusterErr  error
)

// FindClusterBins is FindBins for a whole cluster (`bins.sh cluster`:
// also kubelet, kube-proxy, kube-scheduler, kube-controller-manager).
func FindClusterBins() (ClusterBins, error) {
	clusterOnce.Do(func() {
		dir, err := binDir("cluster")
		if err != nil {
			clusterErr = err
			return
		}
		b, err := checkBins(dir)
		if err != nil {
			clusterErr = err
			return
		}
		clusterVal = ClusterBins{Bins: b,
			Kubectl: filepath.Join(dir, "kubectl"), Kubelet: filepath.Join(dir, "kubelet"),
			KubeProxy: filepath.Join(dir, "kube-proxy"), Scheduler: filepath.Join(dir, "kube-scheduler"),
			ControllerManager: filepath.Join(dir, "kube-controller-manager")}
		for _, p := range []string{clusterVal.Kubectl, clusterVal.Kubelet, clusterVal.KubeProxy, clusterVal.Scheduler, clusterVal.ControllerManager} {
			if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
				clusterErr = fmt.Errorf("no executable %s", p)
				return
			}
		}
	})
	return clusterVal, clusterErr
}

// CacheDir is where bins.sh builds: $WEAVE_K8S_CACHE, else
// $XDG_CACHE_HOME/weave-test/k8s, else ~/.cache/weave-test/k8s.
func CacheDir() string {
	if d := os.Getenv("WEAVE_K8S_CACHE"); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "weave-test", "k8s")
}

func checkBins(dir string) (Bins, error) {
	b := Bins{APIServer: filepath.Join(dir, "kube-apiserver"), Etcd: filepath.Join(dir, "etcd")}
	for _, p := range []string{b.APIServer, b.Etcd} {
		if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
			return Bins{}, fmt.Errorf("no executable %s", p)
		}
	}
	return b, nil
}
