package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// build holds what TestMain produced: the weave script next to bin/ with
// weaver and weaveutil, and the test helper programs.
var build struct {
	weave   string // path of the copied weave script
	helpers string // directory with mcast and junk
	err     error
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
	build.weave = filepath.Join(dir, "weave")
	build.helpers = filepath.Join(dir, "helpers")
	steps := [][]string{
		{"go", "build", "-o", filepath.Join(dir, "bin") + "/", "./prog/..."},
		{"go", "build", "-o", build.helpers + "/", "./test/e2e/mcast", "./test/e2e/junk"},
	}
	for _, s := range steps {
		cmd := exec.Command(s[0], s[1:]...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %v: %w\n%s", s[2:], err, out)
		}
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

// helper returns the path of a test helper program.
func helper(name string) string { return filepath.Join(build.helpers, name) }
