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
	SkipOrFail(t, "needs root (CAP_NET_ADMIN) to create network namespaces; run `sudo -E go test ./...` or `make test` as root")
}

// SkipOrFail skips t loudly with reason, or fails it under CI (CI=true),
// where every test must run. Every guard for a missing privilege, tool or
// kernel feature goes through it.
func SkipOrFail(t testing.TB, reason string) {
	t.Helper()
	msg := "SKIPPING: " + reason
	if InCI() {
		t.Fatal("CI=true, so this is a failure: " + msg)
	}
	t.Skip(msg)
}

// RequireTools skips (or, under CI, fails) t unless every named program is
// on PATH. test/deps.sh installs them.
func RequireTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			SkipOrFail(t, "needs "+tool+" on PATH (run test/deps.sh)")
		}
	}
}

// RequireBrNetfilter loads br_netfilter if its sysctls are missing (bridged
// frames then pass iptables when a namespace sets bridge-nf-call-iptables),
// and skips t loudly (fails it under CI) when that is impossible.
func RequireBrNetfilter(t testing.TB) {
	t.Helper()
	const sysctls = "/proc/sys/net/bridge"
	if _, err := os.Stat(sysctls); err == nil {
		return
	}
	if out, err := exec.Command("modprobe", "br_netfilter").CombinedOutput(); err != nil {
		SkipOrFail(t, "needs the br_netfilter module (no "+sysctls+"; modprobe: "+string(out)+")")
	}
}
