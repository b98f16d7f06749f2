package netnstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BuildProduct compiles what a user installs into dir, once per test run:
// the binaries of ./prog/... into dir/bin, next to a copy of the weave
// script, all built against weave's patch of github.com/weaveworks/mesh
// as make builds them (docs/mesh-patch.md). It returns the script's path.
func BuildProduct(dir string) (weave string, err error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	if err := UsePatchedMesh(root); err != nil {
		return "", err
	}
	if err := GoBuild(root, filepath.Join(dir, "bin"), "./prog/..."); err != nil {
		return "", err
	}
	script, err := os.ReadFile(filepath.Join(root, "weave"))
	if err != nil {
		return "", fmt.Errorf("read weave script: %w", err)
	}
	weave = filepath.Join(dir, "weave")
	if err := os.WriteFile(weave, script, 0o755); err != nil {
		return "", fmt.Errorf("copy weave script: %w", err)
	}
	return weave, nil
}

// UsePatchedMesh makes later go builds of this process use weave's patch
// of github.com/weaveworks/mesh: mesh/patches/apply.sh writes the
// workspace file, which GOWORK names.
func UsePatchedMesh(root string) error {
	cmd := exec.Command("sh", "mesh/patches/apply.sh")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("apply the mesh patch: %w", err)
	}
	return os.Setenv("GOWORK", strings.TrimSpace(string(out)))
}

// GoBuild runs `go build -o outDir/ pkgs...` in the module root.
func GoBuild(root, outDir string, pkgs ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-o", outDir + "/"}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %v: %w\n%s", pkgs, err, out)
	}
	return nil
}

// MainWithBuild is the body of a TestMain that builds binaries once per
// run: it makes a temporary directory, calls build(dir) when running as
// root (only the namespace tests use what it builds), runs the tests,
// removes the directory and exits with the tests' code.
func MainWithBuild(m *testing.M, prefix string, build func(dir string)) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "create temp dir:", err)
		os.Exit(2)
	}
	if os.Geteuid() == 0 {
		build(dir)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
