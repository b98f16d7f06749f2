package cli

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dockerContainer is the part of Docker's container JSON the fake serves.
type dockerContainer struct {
	ID    string `json:"Id"`
	State struct {
		Running bool
		Pid     int
	}
	Config struct {
		Hostname   string
		Domainname string
	}
	Mounts    []struct{ Source, Destination string }
	HostsPath string
}

// fakeDocker serves /_ping, GET /containers/json and
// GET /containers/<name>/json (with or without an API version prefix) on
// the harness's Docker socket.
func (h *harness) fakeDocker(containers map[string]dockerContainer) {
	h.t.Helper()
	l, err := net.Listen("unix", h.cfg.DockerSocket)
	if err != nil {
		h.t.Fatal(err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			path := r.URL.Path
			if v, rest, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/"); ok && strings.HasPrefix(v, "v1.") {
				path = "/" + rest
			}
			w.Header().Set("Api-Version", "1.41")
			w.Header().Set("Content-Type", "application/json")
			switch {
			case path == "/_ping":
				_, _ = w.Write([]byte("OK"))
				return
			case path == "/containers/json":
				var list []map[string]string
				for name, ct := range containers {
					if ct.State.Running && name == ct.ID {
						list = append(list, map[string]string{"Id": ct.ID})
					}
				}
				_ = json.NewEncoder(w).Encode(list)
				return
			}
			name := strings.TrimSuffix(strings.TrimPrefix(path, "/containers/"), "/json")
			ct, ok := containers[name]
			if !ok || r.Method != "GET" {
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"message":"No such container: ` + name + `"}`))
				return
			}
			_ = json.NewEncoder(w).Encode(ct)
		})}}
	srv.Start()
	h.t.Cleanup(srv.Close)
}

func running(id string, pid int) dockerContainer {
	var c dockerContainer
	c.ID = id
	c.State.Running = pid != 0
	c.State.Pid = pid
	return c
}

func TestResolveTarget(t *testing.T) {
	h := newHarness(t)
	nsPath := h.netns("h1c1")
	self := strconv.Itoa(os.Getpid())
	selfNS := filepath.Join("/proc", self, "ns", "net")
	long := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	h.fakeDocker(map[string]dockerContainer{
		"web":     running(long, os.Getpid()),
		"stopped": running("fedcba", 0),
	})
	c := &cmd{Config: h.cfg.withDefaults()}
	cases := []struct {
		in, id, ns, err string
	}{
		{in: "h1c1", id: "h1c1", ns: nsPath},
		{in: nsPath, id: "h1c1", ns: nsPath},
		{in: self, id: self, ns: selfNS},
		{in: selfNS, id: self, ns: selfNS},
		{in: "web", id: long, ns: selfNS},
		{in: "stopped", err: "container stopped is not running"},
		{in: "nosuch", err: "target nosuch: not a network namespace in " + h.cfg.NetnsDir + ", a PID, or a Docker container"},
		{in: "/nonexistent/ns", err: "target /nonexistent/ns: no such network namespace"},
		{in: "999999999", err: "target 999999999: no process with that PID"},
		{in: "..", err: `target "..": not a container ID or name, PID or namespace path`},
		{in: ".", err: `target ".": not a container ID or name, PID or namespace path`},
		{in: "-x", err: `target "-x": not a container ID or name, PID or namespace path`},
	}
	for _, tc := range cases {
		got, err := c.resolveTarget(context.Background(), tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got.ID != tc.id || got.NetNS != tc.ns {
			t.Errorf("%s: got %+v, %v; want id %s ns %s", tc.in, got, err, tc.id, tc.ns)
		}
	}
}

func TestResolveTargetWithoutDocker(t *testing.T) {
	h := newHarness(t)
	c := &cmd{Config: h.cfg.withDefaults()}
	_, err := c.resolveTarget(context.Background(), "web")
	if err == nil || !strings.Contains(err.Error(), "no Docker socket at "+h.cfg.DockerSocket) {
		t.Fatalf("err = %v", err)
	}
}

func TestVethID(t *testing.T) {
	cases := map[string]string{
		"c1":                    "c1",
		"1234567":               "1234567",
		"0123456789abcdef0123":  "0123456789abcdef0123", // docker id: netdev takes 7 chars
		"container-a":           "",                     // hashed
		"/tmp/some/netns/path1": "",
	}
	seen := map[string]string{}
	for in, want := range cases {
		got := target{ID: in}.vethID()
		if want != "" && got != want {
			t.Errorf("vethID(%q) = %q, want %q", in, got, want)
		}
		if want == "" && len(got) != 7 {
			t.Errorf("vethID(%q) = %q, want a 7-char hash", in, got)
		}
		if prev, dup := seen[got[:min(7, len(got))]]; dup {
			t.Errorf("vethID collision between %q and %q", prev, in)
		}
		seen[got[:min(7, len(got))]] = in
	}
	if a, b := (target{ID: "container-a"}).vethID(), (target{ID: "container-b"}).vethID(); a == b {
		t.Errorf("names sharing 7 chars collide: %q", a)
	}
}

// fakeProc makes ProcDir's self and 1 network namespace links equal (same
// namespace as init, which stands in for dockerd without a pid file) or not.
func (h *harness) fakeProc(sameAsInit bool) {
	h.t.Helper()
	dir := h.t.TempDir()
	targets := map[string]string{"self": "net:[4026531840]", "1": "net:[4026531840]"}
	if !sameAsInit {
		targets["self"] = "net:[4026532999]"
	}
	for pid, link := range targets {
		if err := os.MkdirAll(filepath.Join(dir, pid, "ns"), 0o755); err != nil {
			h.t.Fatal(err)
		}
		if err := os.Symlink(link, filepath.Join(dir, pid, "ns", "net")); err != nil {
			h.t.Fatal(err)
		}
	}
	h.cfg.ProcDir = dir
	h.cfg.DockerPIDFile = filepath.Join(dir, "no-dockerd.pid") // compare with PID 1
}

// TestLaunchPluginFlags: launch turns the plugin and the proxy on only
// when an engine answers and we are in the host namespace, and leaves
// explicit choices.
func TestLaunchPluginFlags(t *testing.T) {
	h := newHarness(t)
	h.fakeDocker(map[string]dockerContainer{})
	sock := "unix://" + h.cfg.DockerSocket
	cases := []struct {
		hostNS bool
		args   []string
		want   string
	}{
		{true, nil, "--plugin --proxy --docker-api=" + sock},
		{false, nil, ""},
		{true, []string{"--no-plugin"}, "--proxy --docker-api=" + sock},
		{true, []string{"--no-plugin", "--no-proxy"}, ""},
		{true, []string{"--plugin", "--proxy"}, ""}, // given by the user, passed through as they are
		{true, []string{"--no-proxy"}, "--plugin --docker-api=" + sock},
		{true, []string{"--docker-api", ""}, ""},
		{true, []string{"--docker-api=unix:///nonexistent.sock"}, ""},
		{true, []string{"--docker-api", sock}, "--plugin --proxy"},
	}
	for _, tc := range cases {
		h.fakeProc(tc.hostNS)
		c := &cmd{Config: h.cfg.withDefaults()}
		l, err := parseLaunch(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(c.dockerFlags(context.Background(), l), " "); got != tc.want {
			t.Errorf("host netns %v, launch %q: plugin flags %q, want %q", tc.hostNS, tc.args, got, tc.want)
		}
	}
}

// TestPSListsDockerContainers: a running container with ethwe addresses
// (the plugin's) is listed by its short ID, MAC and CIDRs; one without is not.
func TestPSListsDockerContainers(t *testing.T) {
	h := newHarness(t)
	on := "aaaaaaaaaaaa0123456789abcdef0123456789abcdef0123456789abcdef0123"
	off := "bbbbbbbbbbbb0123456789abcdef0123456789abcdef0123456789abcdef0123"
	h.fakeDocker(map[string]dockerContainer{on: running(on, 4242), off: running(off, 4343)})
	h.kernel.ifaces["/proc/4242/ns/net"] = []netip.Prefix{netip.MustParsePrefix("10.32.0.2/12")}
	_, out, errOut := h.run("ps")
	if out != "aaaaaaaaaaaa 02:00:00:00:00:01 10.32.0.2/12\n" {
		t.Fatalf("ps: %q (stderr %q)", out, errOut)
	}
	if _, out, _ = h.run("ps", on); out != "aaaaaaaaaaaa 02:00:00:00:00:01 10.32.0.2/12\n" {
		t.Fatalf("ps %s: %q", on[:12], out)
	}
}
