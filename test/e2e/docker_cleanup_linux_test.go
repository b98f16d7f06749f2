package e2e

import (
	"net"
	"os"
	osexec "os/exec"
	"slices"
	"strings"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// cleanup restores the root namespace and dockerd to what they were:
// containers and networks carrying our label, the Docker network weave
// (removed through a running router, since dockerd calls the plugin), the
// router, bridge, veths, VXLAN devices and iptables rules (weave reset),
// the underlay veth, the FORWARD policy and the image. It then checks that
// nothing of ours is left.
func (d *dockerHost) cleanup() {
	t := d.t
	if t.Failed() {
		if out, err := os.ReadFile(d.root.RunDir + "/weaver.log"); err == nil {
			t.Logf("root weaver.log (tail):\n%s", netnstest.Tail(string(out), 40))
		}
	}
	if ids := d.listIDs("ps", "-aq"); len(ids) > 0 {
		_, _ = docker(t, append([]string{"rm", "-f"}, ids...)...)
	}
	nets := d.listIDs("network", "ls", "-q")
	if _, err := docker(t, "network", "inspect", "weave"); err == nil || len(nets) > 0 {
		d.ensureRouter()
	}
	if len(nets) > 0 {
		if out, err := docker(t, append([]string{"network", "rm"}, nets...)...); err != nil {
			t.Errorf("cleanup: %v %s", err, out)
		}
	}
	if out, err := d.weave("reset", "--force"); err != nil {
		t.Errorf("cleanup: %v %s", err, out)
	}
	_ = osexec.Command("ip", "link", "del", d.veth).Run()
	if d.policy != "" && d.policy != forwardPolicy(t) {
		_ = osexec.Command("iptables", "-w", "-P", "FORWARD", d.policy).Run()
	}
	_, _ = docker(t, "rmi", "-f", d.image)
	d.checkClean()
}

// listIDs lists Docker objects carrying our label.
func (d *dockerHost) listIDs(args ...string) []string {
	out, err := docker(d.t, append(args, "--filter", "label="+d.label)...)
	if err != nil {
		return nil
	}
	return strings.Fields(out)
}

// ensureRouter relaunches the root router when it is gone, so dockerd can
// reach the plugin to remove networks.
func (d *dockerHost) ensureRouter() {
	if _, err := d.weave("status"); err == nil {
		return
	}
	if out, err := d.weave("launch", "--plugin"); err != nil {
		d.t.Logf("cleanup: relaunch the root router to remove Docker networks: %v %s", err, out)
	}
}

// checkClean reports every object of ours still in the root namespace.
func (d *dockerHost) checkClean() {
	t := d.t
	links, _ := net.Interfaces()
	for _, l := range links {
		for _, p := range []string{"weave", "vethwe", "vethwl", "vethwg", "vxw-", d.tag} {
			if strings.HasPrefix(l.Name, p) {
				t.Errorf("cleanup left interface %s in the root namespace", l.Name)
			}
		}
	}
	if out, _ := osexec.Command("iptables-save").Output(); strings.Contains(string(out), "WEAVE") {
		t.Errorf("cleanup left WEAVE iptables rules or chains in the root namespace")
	}
	for _, tb := range nftTables() {
		if !slices.Contains(d.tables, tb) {
			t.Errorf("cleanup left nftables table %q in the root namespace (not there before the test)", tb)
		}
	}
	if _, err := docker(t, "network", "inspect", "weave"); err == nil {
		t.Errorf("cleanup left the Docker network weave")
	}
	if out, _ := docker(t, "images", "-q", d.image); out != "" {
		t.Errorf("cleanup left the image %s", d.image)
	}
	for _, s := range []string{"/run/docker/plugins/weave.sock", "/run/docker/plugins/weavemesh.sock"} {
		if _, err := os.Stat(s); err == nil {
			t.Errorf("cleanup left %s", s)
		}
	}
}

// nftTables lists the root namespace's nftables tables ("family name");
// nil without nft.
func nftTables() []string {
	out, err := osexec.Command("nft", "list", "tables").Output()
	if err != nil {
		return nil
	}
	var ts []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "table" {
			ts = append(ts, f[1]+" "+f[2])
		}
	}
	return ts
}

// dockerWait bounds the polls of the Docker tests.
const dockerWait = 45 * time.Second
