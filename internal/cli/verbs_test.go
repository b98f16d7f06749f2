package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/version"
)

// TestVerbs drives every verb through Run against a fake router and fake
// kernel: good and bad command lines, exit codes, output and the exact
// requests sent.
func TestVerbs(t *testing.T) {
	type row struct {
		name     string
		args     []string
		answers  map[string]answer // fake router; nil = no router at all
		code     int
		stdout   string // exact, when not ""
		stderr   string // substring, when not ""
		requests []string
		kernel   []string
		env      func(*Config) // changes the harness config
		bridge   bool          // the fake kernel has the weave bridge
		noStdout bool          // stdout must be empty
	}
	ok := func(body string, keys ...string) map[string]answer {
		m := map[string]answer{}
		for _, k := range keys {
			m[k] = answer{200, body}
		}
		return m
	}
	// proxy answers for env and config (proxyverbs.go)
	unix := map[string]answer{"GET /proxyaddrs": {200, "unix:///var/run/weave/weave.sock"}}
	tcp := map[string]answer{"GET /proxyaddrs": {200, "tcp://0.0.0.0:12375 unix:///x.sock"}}
	rows := []row{
		{name: "no args", args: nil, code: 1, stderr: "Usage:"},
		{name: "help", args: []string{"help"}, code: 0},
		{name: "unknown verb", args: []string{"bogus"}, code: 1, stderr: `unknown command "bogus"`},

		{name: "status", args: []string{"status"}, answers: ok("        Version: 2.8.1\n", "GET /status"),
			stdout: "\n        Version: 2.8.1\n\n", requests: []string{"GET /status"}},
		{name: "status peers", args: []string{"status", "peers"}, answers: ok("aa(h1)\n", "GET /status/peers"),
			stdout: "aa(h1)\n", requests: []string{"GET /status/peers"}},
		{name: "status ipam", args: []string{"status", "ipam"}, answers: ok("x\n", "GET /status/ipam"),
			stdout: "x\n", requests: []string{"GET /status/ipam"}},
		{name: "status bad sub", args: []string{"status", "bogus"}, answers: ok(""), code: 1,
			stderr: `status: invalid argument "bogus": use one of targets, connections, peers, dns, ipam, links`},
		{name: "status too many", args: []string{"status", "peers", "x"}, answers: ok(""), code: 1, stderr: "too many arguments"},
		{name: "status 500 keeps message", args: []string{"status", "dns"},
			answers: map[string]answer{"GET /status/dns": {500, "error during template execution"}},
			code:    1, stderr: "error during template execution"},
		{name: "status 404 exits 4", args: []string{"status", "targets"}, answers: ok(""), code: 4, stderr: "404"},
		{name: "status not running", args: []string{"status"}, code: 1, stderr: "weave router is not running (no answer from http://"},

		{name: "report", args: []string{"report"}, answers: ok("{}\n", "GET /report"), stdout: "{}\n",
			requests: []string{"GET /report"}},
		{name: "report -f", args: []string{"report", "-f", "{{.Version}}"}, answers: ok("2.8.1", "GET /report"),
			stdout: "2.8.1", requests: []string{"GET /report?format=%7B%7B.Version%7D%7D"}},
		{name: "report --format=", args: []string{"report", "--format={{.Router.Name}}"}, answers: ok("aa", "GET /report"),
			stdout: "aa", requests: []string{"GET /report?format=%7B%7B.Router.Name%7D%7D"}},
		{name: "report bad", args: []string{"report", "-x"}, answers: ok(""), code: 1, stderr: "report: invalid arguments"},
		{name: "report -f missing", args: []string{"report", "-f"}, answers: ok(""), code: 1, stderr: "report: invalid arguments"},

		{name: "connect none", args: []string{"connect"}, answers: ok(""), code: 1, stderr: "connect: give at least one peer"},
		{name: "connect peers", args: []string{"connect", "10.0.0.2", "h3:6783"}, answers: ok("", "POST /connect"),
			requests: []string{"POST /connect peer=10.0.0.2&peer=h3%3A6783"}},
		{name: "connect replace", args: []string{"connect", "--replace", "10.0.0.2"}, answers: ok("", "POST /connect"),
			requests: []string{"POST /connect peer=10.0.0.2&replace=true"}},
		{name: "connect replace empty", args: []string{"connect", "--replace"}, answers: ok("", "POST /connect"),
			requests: []string{"POST /connect replace=true"}},
		{name: "connect bad option", args: []string{"connect", "--bogus", "x"}, answers: ok(""), code: 1,
			stderr: `connect: unknown option "--bogus"`},
		{name: "connect refused by router", args: []string{"connect", "bad:peer:x"},
			answers: map[string]answer{"POST /connect": {400, "invalid peer name bad:peer:x"}}, code: 1,
			stderr: "invalid peer name bad:peer:x"},
		{name: "forget none", args: []string{"forget"}, answers: ok(""), code: 1, stderr: "forget: give at least one peer"},
		{name: "forget", args: []string{"forget", "10.0.0.2"}, answers: ok("", "POST /forget"),
			requests: []string{"POST /forget peer=10.0.0.2"}},

		{name: "rmpeer none", args: []string{"rmpeer"}, answers: ok(""), code: 1, stderr: "rmpeer: give at least one peer name"},
		{name: "rmpeer", args: []string{"rmpeer", "aa:bb:cc:dd:ee:ff"},
			answers: ok("12 IPs taken over from aa:bb:cc:dd:ee:ff\n", "DELETE /peer/aa:bb:cc:dd:ee:ff"),
			stdout:  "12 IPs taken over from aa:bb:cc:dd:ee:ff\n"},
		{name: "rmpeer without ipam", args: []string{"rmpeer", "x"}, answers: ok(""), code: 4, stderr: "runs without IPAM"},
		{name: "rmpeer unknown peer", args: []string{"rmpeer", "not a peer"},
			answers: map[string]answer{"DELETE /peer/not a peer": {404, "rmpeer not a peer: unknown peer"}}, code: 4,
			stderr: "rmpeer not a peer: no such peer in the IPAM ring"},

		{name: "expose none without ipam", args: []string{"expose"}, answers: ok(""), code: 1, stderr: "no IP allocator"},
		{name: "expose net without ipam", args: []string{"expose", "net:10.2.0.0/16"}, answers: ok(""), code: 1, stderr: "no IP allocator"},
		{name: "expose allocates", args: []string{"expose"},
			answers: merge(ok("10.32.0.1/12", "POST /ip/weave:expose"), ok("", "POST /expose/10.32.0.1/12")), stdout: "10.32.0.1\n",
			requests: []string{"POST /ip/weave:expose?check-alive=true", "POST /expose/10.32.0.1/12"}},
		{name: "expose net allocates", args: []string{"expose", "net:10.2.0.0/16"},
			answers: merge(ok("10.2.0.1/16", "POST /ip/weave:expose/10.2.0.0/16"), ok("", "POST /expose/10.2.0.1/16")),
			stdout:  "10.2.0.1\n", requests: []string{"POST /ip/weave:expose/10.2.0.0/16?check-alive=true", "POST /expose/10.2.0.1/16"}},
		{name: "expose failure releases", args: []string{"expose"},
			answers: merge(ok("10.32.0.1/12", "POST /ip/weave:expose"), map[string]answer{"POST /expose/10.32.0.1/12": {500, "no bridge"}},
				ok("", "DELETE /ip/weave:expose/10.32.0.1")), code: 1, stderr: "no bridge",
			requests: []string{"POST /ip/weave:expose?check-alive=true", "POST /expose/10.32.0.1/12", "DELETE /ip/weave:expose/10.32.0.1"}},
		{name: "hide all exposed", args: []string{"hide"},
			answers: merge(ok("10.32.0.1/12", "GET /ip/weave:expose"), ok("", "DELETE /ip/weave:expose/10.32.0.1")), stdout: "10.32.0.1\n",
			requests: []string{"GET /ip/weave:expose", "DELETE /ip/weave:expose/10.32.0.1"}, kernel: []string{"hide weave 10.32.0.1/12"}},
		{name: "expose bad", args: []string{"expose", "10.2.0.300/16"}, answers: ok(""), code: 1,
			stderr: `expose: invalid address "10.2.0.300/16"`},
		{name: "expose", args: []string{"expose", "10.2.0.254/16"}, answers: ok("", "POST /expose/10.2.0.254/16"),
			stdout: "10.2.0.254\n", requests: []string{"PUT /ip/weave:expose/10.2.0.254/16?noErrorOnUnknown=true&check-alive=true", "POST /expose/10.2.0.254/16"}},
		{name: "expose no masq", args: []string{"expose", "--without-masquerade", "10.2.0.254/16"},
			answers: ok("", "POST /expose/10.2.0.254/16"), stdout: "10.2.0.254\n",
			requests: []string{"PUT /ip/weave:expose/10.2.0.254/16?noErrorOnUnknown=true&check-alive=true", "POST /expose/10.2.0.254/16?skipNAT=true"}},
		{name: "expose unsupported", args: []string{"expose", "10.2.0.254/16"}, answers: ok(""), code: 4,
			stderr: "does not implement POST /expose"},
		{name: "hide", args: []string{"hide", "10.2.0.254/16"}, answers: ok(""), stdout: "10.2.0.254\n",
			requests: []string{"DELETE /ip/weave:expose/10.2.0.254"}, kernel: []string{"hide weave 10.2.0.254/16"}},
		{name: "hide bad option", args: []string{"hide", "-x"}, answers: ok(""), code: 1, stderr: `hide: unknown option "-x"`},

		{name: "version", args: []string{"version"}, answers: ok("2.9.0\n", "GET /report"),
			stdout: "weave script " + version.Version + "\nweave router 2.9.0\n"},
		{name: "version extra", args: []string{"version", "x"}, code: 1, stderr: "version: unexpected arguments"},
		{name: "stop extra", args: []string{"stop", "now"}, code: 1, stderr: "stop: unexpected arguments"},
		{name: "reset bad", args: []string{"reset", "--hard"}, code: 1, stderr: `reset: unknown argument "--hard"`},
		{name: "launch flag without value", args: []string{"launch", "--port"}, code: 1, stderr: "launch: --port needs a value"},

		{name: "attach nothing", args: []string{"attach"}, code: 1, stderr: "attach: missing target"},
		{name: "attach addr only", args: []string{"attach", "10.2.1.1/24"}, code: 1, stderr: "attach: missing target"},
		{name: "attach no prefix len", args: []string{"attach", "10.2.1.1", "c1"}, code: 1,
			stderr: `attach: invalid address "10.2.1.1": give a prefix length, such as 10.2.1.1/24`},
		{name: "attach ipv6", args: []string{"attach", "fd00::1/64", "c1"}, code: 1, stderr: "only IPv4 is supported"},
		{name: "attach bad net", args: []string{"attach", "net:10.2/16", "c1"}, code: 1, stderr: `invalid address "10.2/16"`},
		{name: "attach bad option", args: []string{"attach", "--bogus", "c1"}, code: 1, stderr: `attach: unknown option "--bogus"`},
		{name: "attach unknown target", args: []string{"attach", "10.2.1.1/24", "nosuch"}, code: 1,
			stderr: "target nosuch: not a network namespace in"},
		{name: "detach no options", args: []string{"detach", "--no-multicast-route", "c1"}, code: 1,
			stderr: `detach: unknown option "--no-multicast-route"`},
		{name: "detach no target", args: []string{"detach"}, code: 1, stderr: "detach: missing target"},
		{name: "detach unknown pid", args: []string{"detach", "999999999"}, code: 1, stderr: "target 999999999: no process"},

		// env, config, prime, bridge-type, docker-bridge-ip, attach-bridge (proxyverbs.go)
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
		{name: "prime", args: []string{"prime"}, answers: map[string]answer{"GET /ring": {200, "{}"}}, noStdout: true, requests: []string{"GET /ring"}},
		{name: "prime no ipam", args: []string{"prime"}, answers: map[string]answer{}, code: 4, stderr: "without IPAM"},
		{name: "bridge-type", args: []string{"bridge-type"}, bridge: true, stdout: "bridge\n"},
		{name: "bridge-type none", args: []string{"bridge-type"}, code: 1, stderr: "Weave bridge weave not found"},
		{name: "docker-bridge-ip", args: []string{"docker-bridge-ip"}, bridge: true, stdout: "10.2.0.254\n"},
		{name: "docker-bridge-ip none", args: []string{"docker-bridge-ip"}, code: 1, stderr: "no IPv4 address on docker0"},
		{name: "attach-bridge", args: []string{"attach-bridge"}, bridge: true, noStdout: true, kernel: []string{"attach-bridge weave docker0"}},
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
			if r.stdout != "" && out != r.stdout || r.noStdout && out != "" {
				t.Errorf("stdout %q, want %q", out, r.stdout)
			}
			if r.stderr != "" && !strings.Contains(errOut, r.stderr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, r.stderr)
			}
			if r.code != 0 && strings.Count(strings.TrimSpace(errOut), "\n") > 1 && !strings.Contains(errOut, "Usage:") {
				t.Errorf("error is not one clear line: %q", errOut)
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

// merge combines scripted router answers.
func merge(ms ...map[string]answer) map[string]answer {
	out := map[string]answer{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestHelpGoesToStdout(t *testing.T) {
	h := newHarness(t)
	code, out, _ := h.run("--help")
	if code != 0 || !strings.Contains(out, "weave attach") || !strings.Contains(out, "weave launch") {
		t.Fatalf("help: code %d, out %q", code, out)
	}
}
