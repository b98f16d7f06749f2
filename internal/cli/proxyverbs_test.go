package cli

import (
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
