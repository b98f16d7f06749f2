package netnstest

import (
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run under continuous integration
// (environment CI=true), where missing privileges are failures.
func InCI() bool { return os.Getenv("CI") == "true" }

// RequireRoot skips t loudly unless the process runs as root. Under CI
// (CI=true) not being root fails the test instead: CI must exercise the
// namespace tests.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	const msg = "SKIPPING: needs root (CAP_NET_ADMIN) to create network namespaces; run `sudo -E go test ./...` or `make test` as root"
	if InCI() {
		t.Fatal("CI=true but not root: " + msg)
	}
	t.Skip(msg)
}

// RequireTools skips (or, under CI, fails) t unless every named program is
// on PATH. test/deps.sh installs them.
func RequireTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			msg := "SKIPPING: needs " + tool + " on PATH (run test/deps.sh)"
			if InCI() {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}
