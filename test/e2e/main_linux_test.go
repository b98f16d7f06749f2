package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// build holds what TestMain produced: the weave script next to bin/ with
// weaver and weaveutil, and the test helper programs.
var build struct {
	weave     string // path of the copied weave script
	helpers   string // directory with mcast and junk
	err       error  // building the product (weaver, weaveutil, weave script)
	helperErr error  // building the helpers
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "weave-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: create temp dir:", err)
		os.Exit(2)
	}
	if os.Geteuid() == 0 {
		build.err = buildAll(dir)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// buildAll compiles the product and helpers into dir once per run.
func buildAll(dir string) error {
	root, err := netnstest.ModuleRoot()
	if err != nil {
		return err
	}
	if err := usePatchedMesh(root); err != nil {
		return err
	}
	build.weave = filepath.Join(dir, "weave")
	build.helpers = filepath.Join(dir, "helpers")
	build.helperErr = goBuild(root, build.helpers, "./test/e2e/mcast", "./test/e2e/junk")
	if err := goBuild(root, filepath.Join(dir, "bin"), "./prog/..."); err != nil {
		return err
	}
	script, err := os.ReadFile(filepath.Join(root, "weave"))
	if err != nil {
		return fmt.Errorf("read weave script: %w", err)
	}
	if err := os.WriteFile(build.weave, script, 0o755); err != nil {
		return fmt.Errorf("copy weave script: %w", err)
	}
	return nil
}

// usePatchedMesh makes the go builds below use weave's patch of
// github.com/weaveworks/mesh, as make does: mesh/patches/apply.sh writes
// the workspace file, which GOWORK names (docs/mesh-patch.md).
func usePatchedMesh(root string) error {
	cmd := exec.Command("sh", "mesh/patches/apply.sh")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("apply the mesh patch: %w", err)
	}
	return os.Setenv("GOWORK", strings.TrimSpace(string(out)))
}

// goBuild runs `go build -o outDir/ pkgs...` in the module root.
func goBuild(root, outDir string, pkgs ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-o", outDir + "/"}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %v: %w\n%s", pkgs, err, out)
	}
	return nil
}

// helper returns the path of a test helper program.
func helper(name string) string { return filepath.Join(build.helpers, name) }
