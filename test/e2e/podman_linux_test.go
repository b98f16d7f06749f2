//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// busyboxPath is Debian busybox-static's binary (test/deps.sh installs it).
const busyboxPath = "/bin/busybox"

// podmanHost is podman 4.3 on one namespace host, with every path under
// a temp dir: CNI backend, runc, cgroupfs, lowered ulimits (the machine's
// hard limits are below podman's defaults), the host's CNI dirs.
type podmanHost struct {
	t    *testing.T
	ch   cniHost
	root string
}

func newPodmanHost(t *testing.T, ch cniHost) *podmanHost {
	t.Helper()
	p := &podmanHost{t: t, ch: ch, root: t.TempDir()}
	conf := fmt.Sprintf(`[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = %q
runtime = "runc"
tmp_dir = %q
[network]
network_backend = "cni"
network_config_dir = %q
cni_plugin_dirs = [%q, "/usr/lib/cni"]
`, filepath.Join(p.root, "events.log"), filepath.Join(p.root, "tmp"), ch.confDir, ch.binDir)
	storage := fmt.Sprintf("[storage]\ndriver = \"overlay\"\ngraphroot = %q\nrunroot = %q\n",
		filepath.Join(p.root, "root"), filepath.Join(p.root, "run"))
	p.write("containers.conf", conf)
	p.write("storage.conf", storage)
	t.Cleanup(p.cleanup) // runs before t.TempDir's removal
	p.importBox()
	return p
}

func (p *podmanHost) write(name, content string) {
	p.t.Helper()
	if err := os.WriteFile(filepath.Join(p.root, name), []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// podman runs podman in the host's network namespace.
func (p *podmanHost) podman(args ...string) (string, error) {
	env := append(p.ch.env(), "CONTAINERS_CONF="+filepath.Join(p.root, "containers.conf"),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(p.root, "storage.conf"))
	out, err := p.ch.inHost(env, append([]string{"podman"}, args...)...)
	return strings.TrimSpace(out), err
}

func (p *podmanHost) must(args ...string) string {
	p.t.Helper()
	out, err := p.podman(args...)
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

// importBox imports localhost/box from a busybox-static rootfs.
func (p *podmanHost) importBox() {
	p.t.Helper()
	rootfs := filepath.Join(p.root, "rootfs")
	for _, d := range []string{"bin", "etc", "proc", "sys", "dev", "tmp"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			p.t.Fatal(err)
		}
	}
	data, err := os.ReadFile(busyboxPath)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "busybox"), data, 0o755); err != nil {
		p.t.Fatal(err)
	}
	for _, a := range []string{"sh", "ping", "ip", "sleep", "cat"} {
		if err := os.Symlink("busybox", filepath.Join(rootfs, "bin", a)); err != nil {
			p.t.Fatal(err)
		}
	}
	p.write("rootfs/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
	p.write("rootfs/etc/group", "root:x:0:\n")
	tar := filepath.Join(p.root, "rootfs.tar")
	if out, err := exec.Command("tar", "-C", rootfs, "-cf", tar, ".").CombinedOutput(); err != nil {
		p.t.Fatalf("tar rootfs: %v %s", err, out)
	}
	p.must("import", "--change", `CMD ["/bin/sh"]`, "--change", "ENV PATH=/bin", tar, "localhost/box:latest")
}

// cleanup removes every container (so CNI DEL runs), then unmounts what
// podman left under root and forgets cached CNI results of our containers.
func (p *podmanHost) cleanup() {
	ids, _ := p.podman("ps", "-a", "-q", "--no-trunc")
	if _, err := p.podman("rm", "-a", "-f"); err != nil {
		p.t.Logf("podman rm -a -f: %v", err)
	}
	for _, id := range strings.Fields(ids) {
		_ = os.Remove(filepath.Join(cniResultsDir, "weave-"+id+"-eth0"))
	}
	for _, m := range mountsUnder(p.root) {
		if out, err := exec.Command("umount", "-l", m).CombinedOutput(); err != nil {
			p.t.Logf("umount %s: %v %s", m, err, out)
		}
	}
}

// mountsUnder lists mount points below dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			out = append(out, fields[4])
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// TestPodmanAcrossHosts: after `weave setup-cni`, `podman run --network
// weave` on h1 and h2 puts containers on the mesh that ping each other,
// and `podman rm` releases the address in IPAM.
func TestPodmanAcrossHosts(t *testing.T) {
	netnstest.RequireTools(t, "podman", "runc", "tar", "umount")
	if _, err := os.Stat(busyboxPath); err != nil {
		netnstest.RequireTools(t, "busybox") // skips loudly (fails under CI): install busybox-static
	}
	ic, hosts := newCNICluster(t)
	p1, p2 := newPodmanHost(t, hosts[0]), newPodmanHost(t, hosts[1])
	if nets := p1.must("network", "ls", "--format", "{{.Name}}"); !strings.Contains(nets, "weave") {
		t.Fatalf("podman does not list network weave: %s", nets)
	}
	id1 := p1.must("run", "-d", "--network", "weave", "--name", "c1", "localhost/box", "sleep", "600")
	p2.must("run", "-d", "--network", "weave", "--name", "c2", "localhost/box", "sleep", "600")
	ip1 := p1.must("inspect", "-f", "{{.NetworkSettings.Networks.weave.IPAddress}}", "c1")
	if !strings.HasPrefix(ip1, "10.40.") {
		t.Fatalf("c1 got address %q, want one in %s", ip1, cniRange)
	}
	netnstest.WaitFor(t, pingTimeout, "c2 to ping c1 across the mesh", func() error {
		_, err := p2.podman("exec", "c2", "ping", "-c", "1", "-W", "1", ip1)
		return err
	})
	if code, held, err := ic.routerGET(1, "/ip/"+id1); err != nil || code != 200 || !strings.HasPrefix(held, ip1+"/") {
		t.Fatalf("IPAM on h1 holds %d %q %v for c1, want %s", code, held, err, ip1)
	}
	p1.must("rm", "-f", "c1")
	if code, body, err := ic.routerGET(1, "/ip/"+id1); err != nil || !ipamHoldsNone(code, body) {
		t.Fatalf("after podman rm, GET /ip/%s = %d %q %v; want no address", id1, code, body, err)
	}
}
