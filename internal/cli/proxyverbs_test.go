package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestProxyAndHelperVerbs: env, config, prime, bridge-type,
// docker-bridge-ip and attach-bridge, with 2.8.1's output and exit codes.
func TestProxyAndHelperVerbs(t *testing.T) {
	unix := map[string]answer{"GET /proxyaddrs": {200, "unix:///var/run/weave/weave.sock"}}
	tcp := map[string]answer{"GET /proxyaddrs": {200, "tcp://0.0.0.0:12375 unix:///x.sock"}}
	rows := []struct {
		name     string
		env      func(*Config)
		args     []string
		answers  map[string]answer
		bridge   bool
		code     int
		stdout   string
		stderr   string
		requests []string
		kernel   []string
	}{
		{name: "env", args: []string{"env"}, answers: unix,
			stdout: "export DOCKER_HOST=unix:///var/run/weave/weave.sock ORIG_DOCKER_HOST=\n", requests: []string{"GET /proxyaddrs"}},
		{name: "env keeps DOCKER_HOST", env: func(c *Config) { c.OrigDockerHost = "tcp://10.0.0.5:2375" }, args: []string{"env"}, answers: tcp,
			stdout: "export DOCKER_HOST=tcp://10.0.0.5:12375 ORIG_DOCKER_HOST=tcp://10.0.0.5:2375\n"},
		{name: "env tcp local", args: []string{"env"}, answers: tcp, stdout: "export DOCKER_HOST=tcp://127.0.0.1:12375 ORIG_DOCKER_HOST=\n"},
		{name: "env already", env: func(c *Config) { c.OrigDockerHost = "unix:///var/run/weave/weave.sock" }, args: []string{"env"}, answers: unix,
			stdout: "export DOCKER_HOST=unix:///var/run/weave/weave.sock\n"},
		{name: "env restore", env: func(c *Config) { c.RestoreDockerHost = "unix:///var/run/docker.sock" }, args: []string{"env", "--restore"},
			stdout: "export DOCKER_HOST=unix:///var/run/docker.sock\n"},
		{name: "env no proxy", args: []string{"env"}, answers: map[string]answer{"GET /proxyaddrs": {200, ""}}, code: 1, stderr: "weave proxy is not running"},
		{name: "env no router", args: []string{"env"}, code: 1, stderr: "weave router is not running"},
		{name: "env bad arg", args: []string{"env", "--bogus"}, code: 1, stderr: "env: unexpected arguments"},
		{name: "config", args: []string{"config"}, answers: unix, stdout: "-H=unix:///var/run/weave/weave.sock\n"},
		{name: "prime", args: []string{"prime"}, answers: map[string]answer{"GET /ring": {200, "{}"}}, stdout: "-", requests: []string{"GET /ring"}},
		{name: "prime no ipam", args: []string{"prime"}, answers: map[string]answer{}, code: 4, stderr: "without IPAM"},
		{name: "bridge-type", args: []string{"bridge-type"}, bridge: true, stdout: "bridge\n"},
		{name: "bridge-type none", args: []string{"bridge-type"}, code: 1, stderr: "Weave bridge weave not found"},
		{name: "docker-bridge-ip", args: []string{"docker-bridge-ip"}, bridge: true, stdout: "10.2.0.254\n"},
		{name: "docker-bridge-ip none", args: []string{"docker-bridge-ip"}, code: 1, stderr: "no IPv4 address on docker0"},
		{name: "attach-bridge", args: []string{"attach-bridge"}, bridge: true, stdout: "-", kernel: []string{"attach-bridge weave docker0"}},
		{name: "attach-bridge named", args: []string{"attach-bridge", "br1"}, bridge: true, kernel: []string{"attach-bridge weave br1"}},
		{name: "attach-bridge no weave", args: []string{"attach-bridge"}, code: 1, stderr: "Please run 'weave launch'"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			h := newHarness(t)
			h.kernel.bridgeOK = r.bridge
			if r.env != nil {
				r.env(&h.cfg)
			}
			if r.answers != nil {
				h.withRouter()
				for k, a := range r.answers {
					h.router.set(k, a.code, a.body)
				}
			}
			code, out, errOut := h.run(r.args...)
			if code != r.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, r.code, errOut)
			}
			if r.stdout == "-" && out != "" || r.stdout != "" && r.stdout != "-" && out != r.stdout {
				t.Errorf("stdout %q, want %q", out, r.stdout)
			}
			if r.stderr != "" && !strings.Contains(errOut, r.stderr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, r.stderr)
			}
			if r.requests != nil && !slices.Equal(h.router.got(), r.requests) {
				t.Errorf("requests %q, want %q", h.router.got(), r.requests)
			}
			if r.kernel != nil && !slices.Equal(h.kernel.calls, r.kernel) {
				t.Errorf("kernel calls %q, want %q", h.kernel.calls, r.kernel)
			}
		})
	}
}

// TestAttachRewriteHosts: attach --rewrite-hosts --add-host writes the
// container's hosts file with its weave address and the static entries;
// a namespace target is refused; a bad --add-host is a usage error.
func TestAttachRewriteHosts(t *testing.T) {
	h := newHarness(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("172.17.0.2\tweb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	web := running("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", os.Getpid())
	web.Config.Hostname, web.Config.Domainname, web.HostsPath = "web", "weave.local", hosts
	h.fakeDocker(map[string]dockerContainer{"web": web})
	h.withRouter()
	code, out, errOut := h.run("attach", "10.2.1.1/24", "--rewrite-hosts", "--add-host", "db:10.9.9.9", "--add-host=gw:10.2.0.1", "--without-dns", "web")
	if code != 0 || out != "10.2.1.1\n" {
		t.Fatalf("attach --rewrite-hosts: %d %q %q", code, out, errOut)
	}
	data, _ := os.ReadFile(hosts)
	for _, w := range []string{"10.2.1.1\tweb.weave.local web\n", "10.9.9.9\tdb\n", "10.2.0.1\tgw\n", "127.0.0.1\tlocalhost\n"} {
		if !strings.Contains(string(data), w) {
			t.Fatalf("hosts file:\n%s\nwant %q", data, w)
		}
	}
	h.netns("ns1")
	if code, _, errOut := h.run("attach", "10.2.1.2/24", "--rewrite-hosts", "ns1"); code != 1 || !strings.Contains(errOut, "--rewrite-hosts needs a Docker container") {
		t.Fatalf("attach --rewrite-hosts on a namespace: %d %q", code, errOut)
	}
	if code, _, errOut := h.run("attach", "--add-host", "db", "web"); code != 1 || !strings.Contains(errOut, `invalid --add-host "db": want name:ip`) {
		t.Fatalf("attach --add-host db: %d %q", code, errOut)
	}
}
