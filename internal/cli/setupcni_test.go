package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setupCNIEnv has fake plugin binaries in WEAVE_BIN_DIR and empty CNI dirs.
type setupCNIEnv struct {
	cfg              Config
	out, errOut      *bytes.Buffer
	binDir, confDir  string
	conflist, netBin string
}

func newSetupCNIEnv(t *testing.T) *setupCNIEnv {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join(root, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range cniBinaries {
		if err := os.WriteFile(filepath.Join(src, b), []byte("#!/bin/sh\n# "+b+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := &setupCNIEnv{out: &bytes.Buffer{}, errOut: &bytes.Buffer{},
		binDir: filepath.Join(root, "bin"), confDir: filepath.Join(root, "net.d")}
	e.cfg = Config{BinDir: src, Stdout: e.out, Stderr: e.errOut}
	e.conflist = filepath.Join(e.confDir, CNIConflistName)
	e.netBin = filepath.Join(e.binDir, "weave-net")
	return e
}

func (e *setupCNIEnv) run(extra ...string) int {
	e.out.Reset()
	e.errOut.Reset()
	args := append([]string{"setup-cni", "--cni-bin-dir", e.binDir, "--cni-conf-dir=" + e.confDir}, extra...)
	return Run(context.Background(), e.cfg, args)
}

func TestSetupCNIInstallsAndIsIdempotent(t *testing.T) {
	e := newSetupCNIEnv(t)
	if code := e.run(); code != 0 {
		t.Fatalf("setup-cni: exit %d: %s", code, e.errOut)
	}
	for _, b := range cniBinaries {
		st, err := os.Stat(filepath.Join(e.binDir, b))
		if err != nil || st.Mode().Perm() != 0o755 {
			t.Fatalf("%s not installed executable: %v %v", b, st, err)
		}
	}
	data, err := os.ReadFile(e.conflist)
	if err != nil || string(data) != conflistFor("", true) {
		t.Fatalf("conflist = %q, %v", data, err)
	}
	if !strings.Contains(e.errOut.String(), "no portmap plugin") {
		t.Errorf("expected a note about the missing portmap plugin, stderr: %s", e.errOut)
	}
	if code := e.run(); code != 0 || strings.Contains(e.out.String(), "installed") || strings.Contains(e.out.String(), "wrote") {
		t.Fatalf("second run: exit %d, stdout %q: want everything up to date", code, e.out)
	}
	entries, _ := os.ReadDir(e.confDir)
	if len(entries) != 1 {
		t.Errorf("conf dir holds %d entries after two runs, want only the conflist", len(entries))
	}
}

func TestSetupCNIRefusesForeignConflist(t *testing.T) {
	e := newSetupCNIEnv(t)
	foreign := `{"cniVersion":"1.0.0","name":"weave","plugins":[{"type":"bridge"}]}`
	if err := os.MkdirAll(e.confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.conflist, []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := e.run(); code != 1 || !strings.Contains(e.errOut.String(), "not written by weave") {
		t.Fatalf("exit %d, stderr %q: want a refusal", code, e.errOut)
	}
	if data, _ := os.ReadFile(e.conflist); string(data) != foreign {
		t.Fatalf("foreign conflist was changed to %q", data)
	}
	if code := e.run("--force"); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, e.errOut)
	}
	if data, _ := os.ReadFile(e.conflist); string(data) != conflistFor("", true) {
		t.Fatalf("--force left %q", data)
	}
}

func TestSetupCNIReplacesWeave281Conflist(t *testing.T) {
	e := newSetupCNIEnv(t)
	old := `{"cniVersion":"0.3.0","name":"weave","plugins":[{"name":"weave","type":"weave-net","hairpinMode":false},` +
		`{"type":"portmap","capabilities":{"portMappings":true},"snat":true}]}`
	if err := os.MkdirAll(e.confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.conflist, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := e.run(); code != 0 {
		t.Fatalf("exit %d: %s", code, e.errOut)
	}
	if data, _ := os.ReadFile(e.conflist); string(data) != conflistFor("", true) {
		t.Fatalf("2.8.1 conflist not upgraded: %q", data)
	}
}

func TestSetupCNIUpdatesChangedBinary(t *testing.T) {
	e := newSetupCNIEnv(t)
	if code := e.run(); code != 0 {
		t.Fatalf("exit %d: %s", code, e.errOut)
	}
	if err := os.WriteFile(filepath.Join(e.cfg.BinDir, "weave-net"), []byte("new"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code := e.run(); code != 0 || !strings.Contains(e.out.String(), "installed "+e.netBin) {
		t.Fatalf("exit %d, stdout %q: want weave-net reinstalled", code, e.out)
	}
	if data, _ := os.ReadFile(e.netBin); string(data) != "new" {
		t.Fatalf("weave-net = %q", data)
	}
}

func TestSetupCNIArgs(t *testing.T) {
	for _, args := range [][]string{{"--cni-bin-dir"}, {"--cni-conf-dir="}, {"--bogus"}} {
		if _, err := parseSetupCNI(args); err == nil {
			t.Errorf("parseSetupCNI(%q) accepted", args)
		}
	}
	a, err := parseSetupCNI(nil)
	if err != nil || a.binDir != DefaultCNIBinDir || a.confDir != DefaultCNIConfDir {
		t.Errorf("defaults = %+v, %v", a, err)
	}
}

func TestSetupCNINamesANonDefaultRouterAddress(t *testing.T) {
	e := newSetupCNIEnv(t)
	e.cfg.HTTPAddr = "127.0.0.1:7784"
	if code := e.run(); code != 0 {
		t.Fatalf("exit %d: %s", code, e.errOut)
	}
	data, _ := os.ReadFile(e.conflist)
	if !strings.Contains(string(data), `"httpAddr": "127.0.0.1:7784",`) || !isWeaveConflist(data) {
		t.Fatalf("conflist lacks the router address or is not recognised as weave's: %s", data)
	}
	e.cfg.HTTPAddr = ""
	if code := e.run(); code != 0 {
		t.Fatalf("back to the default address: exit %d: %s", code, e.errOut)
	}
	if data, _ := os.ReadFile(e.conflist); strings.Contains(string(data), "httpAddr") {
		t.Fatalf("default address must not be written: %s", data)
	}
}

// TestSetupCNIHairpinMode: --hairpin-mode=false (HAIRPIN_MODE of the
// DaemonSet) lands in the conflist, which setup-cni still recognises as
// its own on the next run; a bad value is a usage error.
func TestSetupCNIHairpinMode(t *testing.T) {
	e := newSetupCNIEnv(t)
	if code := e.run("--hairpin-mode=false"); code != 0 {
		t.Fatalf("setup-cni --hairpin-mode=false: exit %d: %s", code, e.errOut)
	}
	data, err := os.ReadFile(e.conflist)
	if err != nil || !strings.Contains(string(data), `"hairpinMode": false`) {
		t.Fatalf("conflist = %s, %v; want hairpinMode false", data, err)
	}
	if code := e.run(); code != 0 || !strings.Contains(e.out.String(), "wrote") {
		t.Fatalf("rerun with the default: exit %d, out %q, err %q; want it to rewrite our own conflist", code, e.out.String(), e.errOut.String())
	}
	if code := e.run("--hairpin-mode=sometimes"); code == 0 || !strings.Contains(e.errOut.String(), "--hairpin-mode") {
		t.Fatalf("bad value: exit %d, %s", code, e.errOut.String())
	}
}
