//go:build linux

package e2e

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// cniRange is the IPAM range of the CNI tests' routers.
const cniRange = "10.40.0.0/16"

// cniResultsDir is where libcni (cnitool, podman) caches results; it is a
// system path, so the tests remove the entries they caused.
const cniResultsDir = "/var/lib/cni/results"

// cniHost is a host whose plugins and conflist `weave setup-cni` installed
// into its own directories.
type cniHost struct {
	h                        *netnstest.Host
	binDir, confDir, dataDir string
}

// newCNICluster launches two IPAM routers and runs setup-cni on both
// (twice, checking the second run changes nothing).
func newCNICluster(t *testing.T) (*ipamCluster, []cniHost) {
	t.Helper()
	netnstest.RequireTools(t, "nsenter")
	if _, err := os.Stat("/usr/lib/cni/portmap"); err != nil {
		netnstest.RequireTools(t, "portmap") // skips loudly (fails under CI): install containernetworking-plugins
	}
	ic := newIPAMCluster(t, 2, cniRange)
	ic.launch(1)
	ic.launch(2)
	var hosts []cniHost
	for i := 1; i <= 2; i++ {
		base := t.TempDir()
		ch := cniHost{h: ic.host(i), binDir: filepath.Join(base, "bin"), confDir: filepath.Join(base, "net.d"), dataDir: filepath.Join(base, "data")}
		args := []string{"setup-cni", "--cni-bin-dir", ch.binDir, "--cni-conf-dir", ch.confDir}
		ic.weave(i, args...)
		if out := ic.weave(i, args...); strings.Contains(out, "installed") || strings.Contains(out, "wrote") {
			t.Fatalf("second setup-cni on h%d changed files: %s", i, out)
		}
		hosts = append(hosts, ch)
	}
	return ic, hosts
}

// hostEnv is what a runtime on ch would pass plugins.
func (ch cniHost) env() []string {
	return append(os.Environ(), "NETCONFPATH="+ch.confDir, "CNI_PATH="+ch.binDir+":/usr/lib/cni",
		"WEAVE_CNI_DATA_DIR="+ch.dataDir)
}

// inHost runs argv in ch's network namespace only (nsenter --net, not
// ip netns exec, which remounts /sys) and returns stdout.
func (ch cniHost) inHost(env []string, argv ...string) (string, error) {
	cmd := exec.Command("nsenter", append([]string{"--net=" + netnstest.NSPath(ch.h.NS), "--"}, argv...)...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s on %s: %w; stdout %s; stderr %s", strings.Join(argv, " "), ch.h.Name, err,
			strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// cnitoolID is the container ID cnitool derives from a netns path.
func cnitoolID(nsPath string) string {
	s := sha512.Sum512([]byte(nsPath))
	return fmt.Sprintf("cnitool-%x", s[:10])
}

// cniTool finds cnitool on PATH or in test/deps.sh's tool cache.
func cniTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("cnitool"); err == nil {
		return p
	}
	p := filepath.Join(toolCacheBin(), "cnitool")
	if _, err := os.Stat(p); err != nil {
		netnstest.RequireTools(t, "cnitool") // skips loudly, or fails under CI
	}
	return p
}

// toolCacheBin mirrors test/deps.sh: $WEAVE_TOOLS_BIN, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/weave-tools/bin.
func toolCacheBin() string {
	if d := os.Getenv("WEAVE_TOOLS_BIN"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "weave-tools", "bin")
}

// resultIP is the first address of a CNI result printed by cnitool.
func resultIP(t *testing.T, out string) string {
	t.Helper()
	var res struct {
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.IPs) == 0 {
		t.Fatalf("cnitool printed no result with an IP: %v: %s", err, out)
	}
	ip, _, _ := strings.Cut(res.IPs[0].Address, "/")
	return ip
}

// ipamHoldsNone reads a GET /ip/<id> answer: 2.8.1 answers 200 with an
// empty body for an ident without addresses (older routers: 404).
func ipamHoldsNone(code int, body string) bool {
	return code == 404 || code == 200 && strings.TrimSpace(body) == ""
}

// TestCNIToolAcrossHosts: cnitool adds a namespace on each of two hosts
// through the installed conflist (weave-net then portmap); they ping each
// other through the mesh; check, status and del work, and del releases
// the addresses.
func TestCNIToolAcrossHosts(t *testing.T) {
	tool := cniTool(t)
	ic, hosts := newCNICluster(t)
	var ips, ids, paths []string
	for i, ch := range hosts {
		c := ic.tp.NewContainer(ch.h, fmt.Sprintf("c%d", i+1), "")
		path := netnstest.NSPath(c.NS)
		id := cnitoolID(path)
		t.Cleanup(func() { _ = os.Remove(filepath.Join(cniResultsDir, "weave-"+id+"-eth0")) })
		out, err := ch.inHost(ch.env(), tool, "add", "weave", path)
		if err != nil {
			t.Fatal(err)
		}
		ips, ids, paths = append(ips, resultIP(t, out)), append(ids, id), append(paths, path)
	}
	c1 := filepath.Base(paths[0])
	netnstest.WaitFor(t, pingTimeout, "c1 to ping c2 across the mesh", func() error {
		_, err := netnstest.Ping(c1, ips[1], 1)
		return err
	})
	for i, ch := range hosts {
		for _, verb := range [][]string{{"check", "weave", paths[i]}, {"status", "weave", paths[i]}} {
			if _, err := ch.inHost(ch.env(), append([]string{tool}, verb...)...); err != nil {
				t.Fatalf("cnitool %s: %v", verb[0], err)
			}
		}
		for range 2 { // DEL is idempotent
			if _, err := ch.inHost(ch.env(), tool, "del", "weave", paths[i]); err != nil {
				t.Fatal(err)
			}
		}
		if code, body, err := ic.routerGET(i+1, "/ip/"+ids[i]); err != nil || !ipamHoldsNone(code, body) {
			t.Fatalf("after cnitool del, GET /ip/%s on h%d = %d %q %v; want no address", ids[i], i+1, code, body, err)
		}
	}
	cniToolStatus(t, ic, hosts[0], tool)
}

// cniToolStatus: the installed list is 1.0.0, for which libcni sends no
// STATUS; a 1.1.0 list next to it gets STATUS from cnitool: success while
// the router runs, the plugin's error 50 once it is stopped.
func cniToolStatus(t *testing.T, ic *ipamCluster, ch cniHost, tool string) {
	t.Helper()
	conf := `{"cniVersion":"1.1.0","name":"weave11","plugins":[{"type":"weave-net"}]}`
	if err := os.WriteFile(filepath.Join(ch.confDir, "20-weave11.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.inHost(ch.env(), tool, "status", "weave11", "/nonexistent"); err != nil {
		t.Fatalf("cnitool status with the router up: %v", err)
	}
	ic.weave(1, "stop")
	_, err := ch.inHost(ch.env(), tool, "status", "weave11", "/nonexistent")
	if err == nil || !strings.Contains(err.Error(), "start it with `weave launch`") {
		t.Fatalf("cnitool status with the router stopped: %v; want the plugin's not-available error", err)
	}
}
