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
	if dir := os.Getenv("WEAVE_K8S_BINS"); dir != "" {
		return checkBins(dir)
	}
	// bins.sh is a fast no-op when the binaries of its versions are there.
	cmd := exec.Command("sh", "-c", binsScript, "bins.sh")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return Bins{}, fmt.Errorf("build kube-apiserver and etcd with test/k8s/bins.sh (`make k8s-bins`): %w", err)
	}
	dir := filepath.Join(CacheDir(), "bin")
	return checkBins(dir)
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
