package image

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestPodmanLoad: podman (as a user without a registry) loads the archive
// and keeps the name. (ctr images import is what every test/cluster node
// does with the weave-kube image.)
func TestPodmanLoad(t *testing.T) {
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "podman", "busybox")
	dir := t.TempDir()
	l := NewLayer()
	if err := l.CopyELF("/bin/busybox", "/bin/busybox"); err != nil {
		t.Fatal(err)
	}
	l.Symlink("/bin/sh", "busybox")
	layer, err := l.Tar()
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "box.tar")
	if err := WriteArchiveFile(archive, []string{"localhost/weave-image-test:1"}, Config{Cmd: []string{"/bin/sh"}}, layer); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(conf, []byte("[engine]\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\nevents_logfile_path = \""+dir+"/events.log\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	podman := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("podman", append([]string{"--root", dir + "/root", "--runroot", dir + "/run", "--storage-driver", "vfs"}, args...)...)
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("podman %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := podman("load", "-i", archive); !strings.Contains(out, "Loaded image: localhost/weave-image-test:1") {
		t.Errorf("podman load: %s", out)
	}
	if out := podman("image", "inspect", "--format", "{{.Config.Cmd}}", "localhost/weave-image-test:1"); strings.TrimSpace(out) != "[/bin/sh]" {
		t.Errorf("loaded image's Cmd: %s", out)
	}
}
