package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// shimPath is the top-level weave script, two directories up.
func shimPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "weave"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestShimIsCleanAndSmall(t *testing.T) {
	p := shimPath(t)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&0o111 == 0 {
		t.Errorf("%s is not executable", p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n >= 300 {
		t.Errorf("weave shim has %d lines, want well under 300", n)
	}
	if out, err := exec.Command("sh", "-n", p).CombinedOutput(); err != nil {
		t.Errorf("sh -n weave: %v\n%s", err, out)
	}
	netnstest.RequireTools(t, "shellcheck")
	if out, err := exec.Command("shellcheck", "-s", "sh", p).CombinedOutput(); err != nil {
		t.Errorf("shellcheck weave: %v\n%s", err, out)
	}
}

// shimCopy installs the shim in a temp dir, optionally with a fake
// bin/weaveutil that echoes its arguments.
func shimCopy(t *testing.T, withBin bool) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(shimPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "weave"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	if withBin {
		writeFakeUtil(t, filepath.Join(dir, "bin"), "bin")
	}
	return dir
}

func writeFakeUtil(t *testing.T, dir, tag string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"" + tag + " weaveutil $*\"\n"
	if err := os.WriteFile(filepath.Join(dir, "weaveutil"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func runShim(t *testing.T, path string, env []string, args ...string) (string, error) {
	t.Helper()
	c := exec.Command(path, args...)
	c.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	out, err := c.CombinedOutput()
	return string(out), err
}

func TestShimFindsWeaveutil(t *testing.T) {
	dir := shimCopy(t, true)
	if out, err := runShim(t, filepath.Join(dir, "weave"), nil, "status", "peers"); err != nil || out != "bin weaveutil status peers\n" {
		t.Errorf("./bin: %q %v", out, err)
	}
	// Through a symlink, ./bin is found next to the real script.
	link := filepath.Join(t.TempDir(), "weave")
	if err := os.Symlink(filepath.Join(dir, "weave"), link); err != nil {
		t.Fatal(err)
	}
	if out, err := runShim(t, link, nil, "report"); err != nil || out != "bin weaveutil report\n" {
		t.Errorf("symlink: %q %v", out, err)
	}
	// Without ./bin, WEAVE_BIN_DIR, then PATH.
	bare := shimCopy(t, false)
	envDir, pathDir := t.TempDir(), t.TempDir()
	writeFakeUtil(t, envDir, "env")
	writeFakeUtil(t, pathDir, "path")
	if out, err := runShim(t, filepath.Join(bare, "weave"), []string{"WEAVE_BIN_DIR=" + envDir}, "version"); err != nil || out != "env weaveutil version\n" {
		t.Errorf("WEAVE_BIN_DIR: %q %v", out, err)
	}
	c := exec.Command(filepath.Join(bare, "weave"), "version")
	c.Env = []string{"PATH=" + pathDir + ":/usr/bin:/bin"}
	if out, err := c.CombinedOutput(); err != nil || string(out) != "path weaveutil version\n" {
		t.Errorf("PATH: %q %v", out, err)
	}
	out, err := runShim(t, filepath.Join(bare, "weave"), nil, "version")
	if err == nil || !strings.Contains(out, "weave: cannot find weaveutil") {
		t.Errorf("missing weaveutil: %q %v", out, err)
	}
}

func TestShimRequiresRootForKernelVerbs(t *testing.T) {
	dir := shimCopy(t, true)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// Observe the refusal as "nobody": make the copy reachable for it.
		for _, d := range []string{dir, filepath.Dir(dir)} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	run := func(args ...string) (string, error) {
		c := exec.Command(filepath.Join(dir, "weave"), args...)
		c.Env = []string{"PATH=/usr/bin:/bin"}
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	for _, verb := range []string{"launch", "attach", "reset"} {
		out, err := run(verb, "x")
		if err == nil || !strings.Contains(out, "weave "+verb+" must be run as root") {
			t.Errorf("%s as non-root: %q %v", verb, out, err)
		}
	}
	if out, err := run("status"); err != nil || out != "bin weaveutil status\n" {
		t.Errorf("status as non-root: %q %v", out, err)
	}
}
