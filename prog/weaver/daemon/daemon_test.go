package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/seedf75a49c6/weave/internal/pidfile"
)

func TestMeshConfig(t *testing.T) {
	c := DefaultConfig(nil)
	c.Host, c.Port, c.ConnLimit, c.NoDiscovery, c.MinProtocolVersion = "10.0.0.1", 7000, 5, true, 2
	c.TrustedSubnets = []netip.Prefix{netip.MustParsePrefix("10.1.2.3/16")}
	mc := meshConfig(c)
	if mc.Host != "10.0.0.1" || mc.Port != 7000 || mc.ConnLimit != 5 || mc.PeerDiscovery || mc.ProtocolMinVersion != 2 {
		t.Errorf("mesh config %+v", mc)
	}
	if mc.Password != nil {
		t.Error("empty password must be nil: mesh treats non-nil as encryption on")
	}
	if len(mc.TrustedSubnets) != 1 || mc.TrustedSubnets[0].String() != "10.1.0.0/16" {
		t.Errorf("trusted subnets %v", mc.TrustedSubnets)
	}
	c.Password = "pw"
	if string(meshConfig(c).Password) != "pw" {
		t.Error("password not passed")
	}
}

func TestRunRefusesWhenAnotherWeaverRuns(t *testing.T) {
	cfg := DefaultConfig(nil)
	cfg.RunDir, cfg.DataDir = t.TempDir(), t.TempDir()
	// Another weaver holds the run dir's lock (here: this process).
	other, err := pidfile.Acquire(cfg.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	// Run must stop at the pid file, before touching bridge or iptables.
	err = Run(context.Background(), cfg, slog.New(slog.DiscardHandler))
	var are *pidfile.AlreadyRunningError
	if !errors.As(err, &are) || are.PID != os.Getpid() {
		t.Fatalf("Run = %v, want AlreadyRunningError(%d)", err, os.Getpid())
	}
	if b, _ := os.ReadFile(filepath.Join(cfg.RunDir, pidfile.Name)); string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Errorf("the other weaver's pid file was changed: %q", b)
	}
}
