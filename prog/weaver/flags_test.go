package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/version"
	"github.com/seedf75a49c6/weave/kube"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseFlagsWeaveCommandLine(t *testing.T) {
	// The command line the 2.8.1 testdata routers ran with, plus peers.
	args := []string{"--name=aa:00:00:00:00:01", "--nickname=h1", "--host=192.168.100.1", "--port=6783",
		"--docker-api=", "--no-dns", "--log-level=debug", "--http-addr=127.0.0.1:6784",
		"--status-addr=127.0.0.1:6782", "--ipalloc-range=", "--trusted-subnets=10.0.0.0/8, 192.168.0.0/16",
		"--conn-limit=30", "--no-discovery", "--min-protocol-version=2", "--mtu=1376", "--pkt-debug",
		"--weave-bridge=wbr", "--data-dir=/tmp/d", "--run-dir=/tmp/r", "--no-fastdp", "--plugin",
		"192.168.100.2", "h3:6783"}
	cfg, act, err := parseFlags(args, io.Discard, env(nil))
	if err != nil || act != actionRun {
		t.Fatalf("parseFlags: %v %v", act, err)
	}
	if cfg.Name != "aa:00:00:00:00:01" || cfg.NickName != "h1" || cfg.Host != "192.168.100.1" ||
		cfg.Port != 6783 || !cfg.NoDNS || cfg.LogLevel != "debug" || cfg.StatusAddr != "127.0.0.1:6782" ||
		cfg.IPAllocRange != "" || cfg.ConnLimit != 30 || !cfg.NoDiscovery || cfg.MinProtocolVersion != 2 ||
		cfg.MTU != 1376 || !cfg.PktDebug || cfg.Bridge != "wbr" || cfg.DataDir != "/tmp/d" ||
		cfg.RunDir != "/tmp/r" || !cfg.NoFastDP || !cfg.Plugin {
		t.Errorf("config: %+v", cfg)
	}
	wantSubnets := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.0.0/16")}
	if !slices.Equal(cfg.TrustedSubnets, wantSubnets) {
		t.Errorf("trusted subnets %v", cfg.TrustedSubnets)
	}
	if !slices.Equal(cfg.Peers, []string{"192.168.100.2", "h3:6783"}) {
		t.Errorf("peers %v", cfg.Peers)
	}
}

func TestParseFlagsPasswordAndDirsFromEnv(t *testing.T) {
	e := env(map[string]string{"WEAVE_PASSWORD": "fromenv", "WEAVE_DATA_DIR": "/e/data", "WEAVE_RUN_DIR": "/e/run"})
	cfg, _, err := parseFlags(nil, io.Discard, e)
	if err != nil || cfg.Password != "fromenv" || cfg.DataDir != "/e/data" || cfg.RunDir != "/e/run" {
		t.Fatalf("env: %+v %v", cfg, err)
	}
	cfg, _, err = parseFlags([]string{"--password=flag"}, io.Discard, e)
	if err != nil || cfg.Password != "flag" {
		t.Fatalf("--password should win over env: %q %v", cfg.Password, err)
	}
	cfg, _, err = parseFlags([]string{"--password="}, io.Discard, e)
	if err != nil || cfg.Password != "" || !cfg.PasswordSetEmpty {
		t.Fatalf("explicit empty --password should win and be noted: %q %v %v", cfg.Password, cfg.PasswordSetEmpty, err)
	}
	if cfg, _, _ = parseFlags(nil, io.Discard, e); cfg.PasswordSetEmpty {
		t.Fatal("PasswordSetEmpty without --password")
	}
}

func TestParseFlagsHelpHidesPassword(t *testing.T) {
	var out bytes.Buffer
	_, _, err := parseFlags([]string{"-h"}, &out, env(map[string]string{"WEAVE_PASSWORD": "topsecret"}))
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("want ErrHelp, got %v", err)
	}
	if strings.Contains(out.String(), "topsecret") || !strings.Contains(out.String(), "-ipalloc-range") {
		t.Errorf("usage text wrong:\n%s", out.String())
	}
}

func TestParseFlagsErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--resume", "10.0.0.1"}, "--resume: cannot be combined with peer arguments"},
		{[]string{"--port=0"}, "--port: invalid value 0"},
		{[]string{"--port=x"}, "invalid value \"x\" for flag -port"},
		{[]string{"--trusted-subnets=10.0.0.0"}, "invalid CIDR \"10.0.0.0\""},
		{[]string{"--log-level=chatty"}, "--log-level: invalid value \"chatty\""},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
	}
	for _, c := range cases {
		_, _, err := parseFlags(c.args, io.Discard, env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}

func TestRunVersionAndUsageErrors(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, &out, io.Discard, env(nil)); err != nil {
		t.Fatal(err)
	}
	if out.String() != "weave router "+version.Version+"\n" {
		t.Errorf("--version printed %q", out.String())
	}
	err := run(context.Background(), []string{"--port=0"}, io.Discard, io.Discard, env(nil))
	var ue *usageError
	if !errors.As(err, &ue) {
		t.Fatalf("want usageError, got %v", err)
	}
	if code := exitCode(err); code != exitUsage {
		t.Errorf("exit code %d, want %d", code, exitUsage)
	}
	if code := exitCode(nil); code != exitOK {
		t.Errorf("exit code for nil = %d", code)
	}
}

// TestParsePluginFlags: 2.8.1's plugin flags, their defaults, --no-plugin
// winning, and socket paths checked only when the plugin is on.
func TestParsePluginFlags(t *testing.T) {
	cfg, _, err := parseFlags(nil, io.Discard, env(map[string]string{"DOCKER_HOST": "unix:///tmp/d.sock"}))
	if err != nil || cfg.PluginEnabled() || cfg.PluginSocket != "/run/docker/plugins/weave.sock" ||
		cfg.PluginMeshSocket != "/run/docker/plugins/weavemesh.sock" || cfg.DockerAPI != "unix:///tmp/d.sock" {
		t.Fatalf("defaults: %v %+v", err, cfg)
	}
	cfg, _, err = parseFlags([]string{"--plugin", "--no-plugin", "--plugin-socket=x"}, io.Discard, env(nil))
	if err != nil || cfg.PluginEnabled() {
		t.Fatalf("--plugin --no-plugin: enabled=%v err=%v; want off, and no socket check", cfg.PluginEnabled(), err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--plugin", "--plugin-socket=rel.sock"}, `--plugin-socket: want an absolute socket path, got "rel.sock"`},
		{[]string{"--plugin", "--plugin-socket=/s", "--plugin-mesh-socket=/s"}, "both are /s; they must differ"},
	} {
		if _, _, err := parseFlags(tc.args, io.Discard, env(nil)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestPProfFlagOffByDefault(t *testing.T) {
	cfg, _, err := parseFlags(nil, io.Discard, env(nil))
	if err != nil || cfg.PProf {
		t.Fatalf("default: pprof=%v err=%v, want off", cfg.PProf, err)
	}
	if cfg, _, err = parseFlags([]string{"--pprof"}, io.Discard, env(nil)); err != nil || !cfg.PProf {
		t.Fatalf("--pprof: pprof=%v err=%v", cfg.PProf, err)
	}
}

// TestAcceptsWeaveKubeFlags: weaver parses the command line weave-kube
// builds from 2.8.1's DaemonSet defaults, so the DaemonSet cannot drift
// from the flags weaver has.
func TestAcceptsWeaveKubeFlags(t *testing.T) {
	kc, err := kube.ConfigFromEnv(func(k string) string {
		return map[string]string{"HOSTNAME": "node1", "WEAVE_STATUS_ADDR": "127.0.0.1:6782", "WEAVE_METRICS_ADDR": "127.0.0.1:6781"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	args := kc.WeaverFlags([]string{"192.168.100.2"}, 3)
	cfg, _, err := parseFlags(args, io.Discard, func(string) string { return "" })
	if err != nil {
		t.Fatalf("weaver %v: %v", args, err)
	}
	if cfg.NickName != "node1" || cfg.MetricsAddr != "127.0.0.1:6781" || !cfg.NoMasqLocal || !cfg.ExpectNPC || cfg.IPAllocInit != "consensus=3" {
		t.Fatalf("parsed %+v", cfg)
	}
}

func TestBadIPTablesBackendRefused(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), nil, io.Discard, &stderr, env(map[string]string{"IPTABLES_BACKEND": "nftables"}))
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `IPTABLES_BACKEND="nftables"`) {
		t.Fatalf("err = %v, want a usage error naming IPTABLES_BACKEND", err)
	}
}

// --expect-npc, which 2.8.1's DaemonSet always passes, turns the NPC guard on.
func TestParseFlagsExpectNPC(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{{nil, false}, {[]string{"--expect-npc"}, true}, {[]string{"--expect-npc=false"}, false}} {
		cfg, _, err := parseFlags(tc.args, io.Discard, env(nil))
		if err != nil || cfg.ExpectNPC != tc.want {
			t.Errorf("parseFlags(%q): ExpectNPC=%v err=%v, want %v", tc.args, cfg.ExpectNPC, err, tc.want)
		}
	}
}

// TestPrintPeerNameMarksOnlyWhatItCreated: --print-peer-name notes that it
// created the peer name file (so the first launch does not take it for an
// earlier one), and notes nothing when the file was already there.
func TestPrintPeerNameMarksOnlyWhatItCreated(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "peername.printed")
	var first, second bytes.Buffer
	if err := run(context.Background(), []string{"--print-peer-name", "--data-dir=" + dir}, &first, io.Discard, env(nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no marker after creating the name: %v", err)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"--print-peer-name", "--data-dir=" + dir}, &second, io.Discard, env(nil)); err != nil {
		t.Fatal(err)
	}
	if first.String() != second.String() || len(first.String()) != len("aa:bb:cc:dd:ee:ff\n") {
		t.Fatalf("printed %q then %q, want the same name twice", first.String(), second.String())
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("marker written for a name file that already existed (%v)", err)
	}
}
