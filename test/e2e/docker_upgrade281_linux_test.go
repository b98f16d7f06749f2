//go:build linux

package e2e

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestLaunchAdopts281DockerVolume: on a Docker host, 2.8.1's `weave launch`
// kept its data file in the volume of container weavedb (/weavedb/
// weavedata.db). Our `weave launch` finds that volume through the machine's
// dockerd and weaver adopts the file: 2.8.1's peer name and addresses.
// The container is a created, never started one from an empty image, as
// 2.8.1's weavedb was (a data-only container); both are removed after.
func TestLaunchAdopts281DockerVolume(t *testing.T) {
	requireDocker(t)
	if build.err != nil {
		t.Fatalf("TestMain could not build the product: %v", build.err)
	}
	if out, err := docker(t, "inspect", "--format", "{{.Id}}", "weavedb"); err == nil {
		t.Fatalf("a container named weavedb exists already (%s): not this test's, leaving it alone", out)
	}
	tp := netnstest.New(t, netnstest.Config{Hosts: 1, Weave: build.weave})
	image := "weave-e2e-empty:" + tp.Prefix
	tar := filepath.Join(t.TempDir(), "empty.tar")
	if out, err := osexec.Command("tar", "-cf", tar, "-T", "/dev/null").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	mustDocker(t, "import", tar, image)
	t.Cleanup(func() { _, _ = docker(t, "rmi", image) })
	mustDocker(t, "create", "--name", "weavedb", "--label", "works.weave.e2e="+tp.Prefix, "-v", "/weavedb", image, "data-only")
	t.Cleanup(func() { _, _ = docker(t, "rm", "-v", "weavedb") })
	vol := mustDocker(t, "inspect", "--format", `{{range .Mounts}}{{if eq .Destination "/weavedb"}}{{.Source}}{{end}}{{end}}`, "weavedb")
	if vol == "" {
		t.Fatal("weavedb has no /weavedb volume")
	}
	data, err := os.ReadFile(filepath.Join("testdata", "weave-2.8.1", nodes281[0].file))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "weavedata.db"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ic := &ipamCluster{t: t, tp: tp}
	name, err := tp.StartRouter(tp.Host(1), "--no-fastdp", "--ipalloc-range", "10.32.0.0/12")
	log, _ := os.ReadFile(filepath.Join(tp.Host(1).RunDir, "weaver.log"))
	if err != nil || name != nodes281[0].peer {
		t.Fatalf("launch: %q, %v; want 2.8.1's peer %s\n%s", name, err, nodes281[0].peer, log)
	}
	if !strings.Contains(string(log), "path="+filepath.Join(vol, "weavedata.db")) {
		t.Errorf("weaver did not adopt the file in weavedb's volume:\n%s", log)
	}
	for _, c := range nodes281[0].containers {
		if code, body, err := ic.routerGET(1, "/ip/"+c.id); err != nil || body != c.cidr {
			t.Errorf("GET /ip/%s: %d %q %v; want %s", c.id, code, body, err, c.cidr)
		}
	}
	ic.weave(1, "stop")
}
