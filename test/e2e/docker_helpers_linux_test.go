package e2e

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/internal/testutil"
)

// rootIP is the underlay address of the router that runs in the root
// network namespace (the Docker host) for the Docker tests.
const rootIP = netnstest.UnderlaySubnet + ".254"

// dockerHost is the root namespace as one more weave host: dockerd's
// containers, a router launched by the real weave script, joined to a
// netnstest underlay through a veth. Only the Docker tests touch the root
// namespace; everything they create there carries tag and is removed at
// cleanup, also on failure.
type dockerHost struct {
	t      *testing.T
	tp     *netnstest.Topology
	tag    string // unique per test: names of containers, networks, image, veth
	label  string // docker label on every container and network we create
	image  string
	veth   string
	root   *netnstest.Host // run and data dirs of the root router
	http   string          // its HTTP API
	policy string          // FORWARD policy before the test
	tables []string        // nftables tables before the test
}

// requireDocker skips loudly (fails under CI=true) when no engine answers.
func requireDocker(t *testing.T) {
	t.Helper()
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "docker", "ip", "iptables", "ping")
	out, err := docker(t, "version", "--format", "{{.Server.Version}}")
	if err == nil {
		return
	}
	msg := "SKIPPING: no Docker engine answers on /var/run/docker.sock: " + strings.TrimSpace(out)
	if netnstest.InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// docker runs the docker CLI (bounded) and returns its combined output.
func docker(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := osexec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func mustDocker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := docker(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newDockerHost checks the root namespace is free of weave, registers the
// full cleanup, then builds h1 (a namespace host), the root's veth to the
// underlay and the busybox image.
func newDockerHost(t *testing.T) *dockerHost {
	t.Helper()
	requireDocker(t)
	if build.err != nil {
		t.Fatalf("TestMain could not build the product: %v", build.err)
	}
	refuseForeignWeave(t)
	tp := netnstest.New(t, netnstest.Config{Hosts: 1, Weave: build.weave})
	d := &dockerHost{t: t, tp: tp, tag: tp.Prefix, label: "works.weave.e2e=" + tp.Prefix}
	d.image, d.veth = "weave-e2e-busybox:"+d.tag, d.tag+"-rt"
	dir := t.TempDir()
	d.root = &netnstest.Host{Name: "root", RunDir: filepath.Join(dir, "run"), DataDir: filepath.Join(dir, "data")}
	d.http = freeLoopbackAddr(t)
	t.Cleanup(d.cleanup)
	d.policy = forwardPolicy(t)
	d.tables = nftTables()
	d.joinUnderlay()
	d.importImage()
	return d
}

// refuseForeignWeave stops the test when the root namespace already has a
// weave bridge, a Docker network "weave", a live plugin socket or weave's
// nft policy table: those belong to someone else (the cleanup would remove
// the first three, the last would filter the test's traffic).
func refuseForeignWeave(t *testing.T) {
	t.Helper()
	if _, err := net.InterfaceByName("weave"); err == nil {
		t.Fatal("the root namespace already has a bridge named weave; not touching it")
	}
	if _, err := docker(t, "network", "inspect", "weave"); err == nil {
		t.Fatal("Docker already has a network named weave; not touching it")
	}
	// A network policy table hooked on the bridge (npc's) would drop the
	// test's traffic: say so instead of failing on a ping.
	if out, err := osexec.Command("nft", "list", "table", "inet", "weave-npc").CombinedOutput(); err == nil {
		t.Fatalf("the root namespace has nft table inet weave-npc (%d bytes of rules), which filters bridge weave; not touching it", len(out))
	}
	for _, s := range []string{"/run/docker/plugins/weave.sock", "/run/docker/plugins/weavemesh.sock"} {
		if c, err := net.Dial("unix", s); err == nil {
			c.Close()
			t.Fatalf("%s is served by another process; not touching it", s)
		}
	}
}

func freeLoopbackAddr(t *testing.T) string { return testutil.FreeLoopbackAddr(t) }

func forwardPolicy(t *testing.T) string {
	t.Helper()
	out, err := osexec.Command("iptables", "-w", "-S", "FORWARD").Output()
	if err != nil {
		t.Fatalf("iptables -S FORWARD: %v", err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimPrefix(first, "-P FORWARD ")
}

// joinUnderlay wires the root namespace to the underlay bridge as rootIP.
func (d *dockerHost) joinUnderlay() {
	d.t.Helper()
	peer := d.tag + "-ru"
	steps := [][]string{
		{"ip", "link", "add", d.veth, "type", "veth", "peer", "name", peer, "netns", d.tp.Underlay},
		{"ip", "netns", "exec", d.tp.Underlay, "ip", "link", "set", peer, "master", "br0", "up"},
		{"ip", "addr", "add", rootIP + "/24", "dev", d.veth},
		{"ip", "link", "set", d.veth, "up"},
	}
	for _, s := range steps {
		if out, err := osexec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			d.t.Fatalf("%s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
}

// importImage makes a one-binary image from the static busybox.
func (d *dockerHost) importImage() {
	d.t.Helper()
	if err := requireStatic("/bin/busybox"); err != nil {
		d.t.Fatalf("%v (test/deps.sh installs busybox-static)", err)
	}
	dir := d.t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	for _, sub := range []string{"bin", "etc", "proc", "sys", "dev", "tmp"} {
		if err := os.MkdirAll(filepath.Join(rootfs, sub), 0o755); err != nil {
			d.t.Fatal(err)
		}
	}
	copyFile(d.t, "/bin/busybox", filepath.Join(rootfs, "bin", "busybox"))
	for _, a := range []string{"sh", "ping", "ip", "sleep", "cat", "echo", "nslookup", "seq", "true"} {
		if err := os.Symlink("busybox", filepath.Join(rootfs, "bin", a)); err != nil {
			d.t.Fatal(err)
		}
	}
	tar := filepath.Join(dir, "rootfs.tar")
	if out, err := osexec.Command("tar", "-C", rootfs, "-cf", tar, ".").CombinedOutput(); err != nil {
		d.t.Fatalf("tar rootfs: %v: %s", err, out)
	}
	mustDocker(d.t, "import", "-c", `CMD ["/bin/sh"]`, tar, d.image)
}

func requireStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked", path)
		}
	}
	return nil
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err == nil {
		_, err = io.Copy(out, in)
		err = errors.Join(err, out.Close())
	}
	if err != nil {
		t.Fatalf("copy %s: %v", from, err)
	}
}

// weave runs the weave script in the root namespace with the root
// router's directories and HTTP address.
func (d *dockerHost) weave(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, "sh", append([]string{build.weave}, args...)...)
	cmd.Env = append(d.tp.WeaveEnv(d.root), "WEAVE_HTTP_ADDR="+d.http)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("weave %s (root): %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// get fetches a path of the root router's HTTP API.
func (d *dockerHost) get(path string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + d.http + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// runRoot runs a command in the root namespace and returns its output.
func runRoot(name string, args ...string) (string, error) {
	out, err := osexec.Command(name, args...).CombinedOutput()
	return string(out), err
}
