package e2e

import (
	"path/filepath"
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
	netnstest.MainWithBuild(m, "weave-e2e-", func(dir string) { build.err = buildAll(dir) })
}

// buildAll compiles the product and helpers into dir once per run.
func buildAll(dir string) error {
	weave, err := netnstest.BuildProduct(dir)
	if err != nil {
		return err
	}
	build.weave = weave
	root, err := netnstest.ModuleRoot()
	if err != nil {
		return err
	}
	build.helpers = filepath.Join(dir, "helpers")
	build.helperErr = netnstest.GoBuild(root, build.helpers, "./test/e2e/mcast", "./test/e2e/junk")
	return nil
}

// helper returns the path of a test helper program.
func helper(name string) string { return filepath.Join(build.helpers, name) }
