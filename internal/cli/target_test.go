package cli

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeDocker serves GET /containers/<name>/json on the harness's Docker socket.
func (h *harness) fakeDocker(containers map[string]dockerContainer) {
	h.t.Helper()
	l, err := net.Listen("unix", h.cfg.DockerSocket)
	if err != nil {
		h.t.Fatal(err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/containers/"), "/json")
			ct, ok := containers[name]
			if !ok || r.Method != "GET" {
				http.Error(w, `{"message":"No such container: `+name+`"}`, http.StatusNotFound)
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
