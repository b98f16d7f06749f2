package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// harness runs a Plugin on sockets in a temp dir with fake kernel and IPAM.
type harness struct {
	t     *testing.T
	p     *Plugin
	cfg   Config
	alloc *fakeAlloc
	links *fakeLinks
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, alloc: newFakeAlloc(), links: newFakeLinks()}
	h.cfg = Config{
		NetSocket: filepath.Join(dir, "weave.sock"), MeshSocket: filepath.Join(dir, "weavemesh.sock"),
		StateFile: filepath.Join(dir, "data", "docker-networks.json"),
		IPAM:      h.alloc, Links: h.links, CallTimeout: 5 * time.Second,
	}
	h.start()
	return h
}

func (h *harness) start() {
	h.t.Helper()
	p, err := New(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.p = p
	h.t.Cleanup(p.Close)
}

// raw posts body to /call on sock and returns the status and body.
func (h *harness) raw(sock, call string, body []byte) (int, []byte) {
	h.t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	resp, err := hc.Post("http://plugin/"+call, "application/json", bytes.NewReader(body))
	if err != nil {
		h.t.Fatalf("%s: %v", call, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// mesh calls weavemesh.sock with req encoded as JSON and decodes a 200 answer into resp.
func (h *harness) mesh(call string, req, resp any) {
	h.t.Helper()
	h.ok(h.cfg.MeshSocket, call, req, resp)
}

func (h *harness) ok(sock, call string, req, resp any) {
	h.t.Helper()
	body, _ := json.Marshal(req)
	code, out := h.raw(sock, call, body)
	if code != http.StatusOK {
		h.t.Fatalf("%s(%s): HTTP %d %s", call, body, code, out)
	}
	if resp != nil {
		if err := json.Unmarshal(out, resp); err != nil {
			h.t.Fatalf("%s: decode %s: %v", call, out, err)
		}
	}
}

// fails calls weavemesh.sock and returns the Err of a libnetwork error answer.
func (h *harness) fails(call string, body string) string {
	h.t.Helper()
	code, out := h.raw(h.cfg.MeshSocket, call, []byte(body))
	var e struct{ Err string }
	if code == http.StatusOK || json.Unmarshal(out, &e) != nil || e.Err == "" {
		h.t.Fatalf("%s(%s): HTTP %d %q, want an error in libnetwork's {\"Err\": ...} shape", call, body, code, out)
	}
	return e.Err
}

func TestActivateAndCapabilities(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		sock, implements, scope string
	}{
		{h.cfg.NetSocket, `["NetworkDriver"]`, "global"},
		{h.cfg.MeshSocket, `["NetworkDriver","IpamDriver"]`, "local"},
	} {
		var act struct{ Implements json.RawMessage }
		h.ok(c.sock, "Plugin.Activate", nil, &act)
		if string(act.Implements) != c.implements {
			t.Errorf("%s Activate: %s, want %s", filepath.Base(c.sock), act.Implements, c.implements)
		}
		var caps struct{ Scope, ConnectivityScope string }
		h.ok(c.sock, "NetworkDriver.GetCapabilities", nil, &caps)
		if caps.Scope != c.scope || caps.ConnectivityScope != c.scope {
			t.Errorf("%s capabilities %+v, want scope %s", filepath.Base(c.sock), caps, c.scope)
		}
	}
	if code, _ := h.raw(h.cfg.NetSocket, "IpamDriver.RequestPool", []byte(`{}`)); code != http.StatusNotFound {
		t.Errorf("weave.sock answers IpamDriver.RequestPool with %d, want 404 (it has no IPAM)", code)
	}
}

// TestV2OneSocket: under V2 (weaver --plugin-v2, a managed plugin on a
// swarm) weave.sock alone is served, with the global-scope network driver
// and the IPAM driver; there is no weavemesh.sock, and both may even be
// given the same path.
func TestV2OneSocket(t *testing.T) {
	dir := t.TempDir()
	h := &harness{t: t, alloc: newFakeAlloc(), links: newFakeLinks()}
	sock := filepath.Join(dir, "weave.sock")
	h.cfg = Config{NetSocket: sock, MeshSocket: sock, V2: true, StateFile: filepath.Join(dir, "docker-networks.json"),
		IPAM: h.alloc, Links: h.links, CallTimeout: 5 * time.Second}
	h.start()
	var act struct{ Implements json.RawMessage }
	h.ok(sock, "Plugin.Activate", nil, &act)
	if string(act.Implements) != `["NetworkDriver","IpamDriver"]` {
		t.Errorf("Activate: %s, want both drivers", act.Implements)
	}
	var caps struct{ Scope, ConnectivityScope string }
	h.ok(sock, "NetworkDriver.GetCapabilities", nil, &caps)
	if caps.Scope != "global" || caps.ConnectivityScope != "global" {
		t.Errorf("capabilities %+v, want global (swarm networks)", caps)
	}
	var pool struct{ PoolID, Pool string }
	h.ok(sock, "IpamDriver.RequestPool", map[string]any{"AddressSpace": "weaveglobal"}, &pool)
	if pool.Pool != testUniverse.String() {
		t.Errorf("RequestPool: %+v, want the range %s", pool, testUniverse)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files in the socket dir: %v, want weave.sock alone", entries)
	}
	// A swarm's manager allocates, the node asks for the same address, and
	// each releases it: only the second release frees it, so it cannot be
	// handed out again while the other still counts it as in use.
	got := h.requestAddress(pool.PoolID, "", nil)
	ip := strings.Split(got, "/")[0]
	if again := h.requestAddress(pool.PoolID, ip, nil); again != got {
		t.Fatalf("the node's RequestAddress of %s answered %s", ip, again)
	}
	release := func() (int, []byte) {
		body, _ := json.Marshal(map[string]string{"PoolID": pool.PoolID, "Address": ip})
		return h.raw(sock, "IpamDriver.ReleaseAddress", body)
	}
	if code, out := release(); code != http.StatusOK {
		t.Fatalf("first ReleaseAddress: %d %s", code, out)
	}
	if _, ok := h.alloc.idents()[ip]; !ok {
		t.Fatalf("the first of two ReleaseAddress calls freed %s", ip)
	}
	if code, out := release(); code != http.StatusOK {
		t.Fatalf("second ReleaseAddress: %d %s", code, out)
	}
	if _, ok := h.alloc.idents()[ip]; ok {
		t.Fatalf("both ReleaseAddress calls done and %s still allocated", ip)
	}
}

// errorShape: the answers of failures name what was wrong.
func TestBadRequestsGetLibnetworkErrors(t *testing.T) {
	h := newHarness(t)
	h.createNetwork("n1", true)
	for _, c := range []struct{ call, body, want string }{
		{"NetworkDriver.CreateNetwork", `{"NetworkID": `, "malformed request"},
		{"NetworkDriver.CreateNetwork", ``, "empty body"},
		{"NetworkDriver.CreateNetwork", `{"NetworkID":"n2","Options":{"com.docker.network.generic":{"mtu":"1400"}}}`, `unknown driver option "mtu"`},
		{"NetworkDriver.CreateNetwork", `{"NetworkID":"n2","Options":{"com.docker.network.generic":{"works.weave.multicast":"perhaps"}}}`, `works.weave.multicast="perhaps"`},
		{"NetworkDriver.CreateNetwork", `{"NetworkID":"n2","Options":{"color":"blue"}}`, `unknown network option "color"`},
		{"NetworkDriver.CreateNetwork", `{"NetworkID":"n2","Options":{"com.docker.network.enable_ipv6":true}}`, "IPv6"},
		{"NetworkDriver.CreateEndpoint", `{"NetworkID":"nope","EndpointID":"e1"}`, "network nope does not exist"},
		{"NetworkDriver.CreateEndpoint", `{"NetworkID":"n1","EndpointID":"e1","Interface":{"MacAddress":"zz"}}`, `MacAddress "zz"`},
		{"NetworkDriver.Join", `{"NetworkID":"n1","EndpointID":"ghost","SandboxKey":"/x"}`, "endpoint ghost does not exist in network n1"},
		{"NetworkDriver.Leave", `{"NetworkID":"n1","EndpointID":"ghost"}`, "endpoint ghost does not exist"},
		{"NetworkDriver.EndpointOperInfo", `{"NetworkID":"n1","EndpointID":"ghost"}`, "endpoint ghost does not exist"},
		{"NetworkDriver.DeleteEndpoint", `{"NetworkID":"n1","EndpointID":"ghost"}`, "endpoint ghost does not exist"},
		{"NetworkDriver.DeleteNetwork", `{"NetworkID":"nope"}`, "delete network nope: no such network"},
		{"IpamDriver.RequestPool", `{"Pool":"10.99.0.0/16"}`, "subnet 10.99.0.0/16 is outside the weave IPAM range 10.32.0.0/12"},
		{"IpamDriver.RequestPool", `{"Pool":"10.32.0.0/16","SubPool":"10.33.0.0/24"}`, "range 10.33.0.0/24 is outside subnet 10.32.0.0/16"},
		{"IpamDriver.RequestPool", `{"Pool":"banana"}`, `subnet "banana"`},
		{"IpamDriver.RequestPool", `{"V6":true}`, "IPv6"},
		{"IpamDriver.RequestPool", `{"Options":{"size":"big"}}`, `unknown IPAM option "size"`},
		{"IpamDriver.RequestPool", `{"AddressSpace":"elsewhere"}`, `unknown address space "elsewhere"`},
		{"IpamDriver.ReleasePool", `{"PoolID":"default/10.0.0.0/8"}`, `pool "default/10.0.0.0/8" is not a weave pool`},
		{"IpamDriver.RequestAddress", `{"PoolID":"other"}`, `pool "other" is not a weave pool`},
		{"IpamDriver.RequestAddress", `{"PoolID":"weave-10.32.0.0/12-10.32.0.0/12","Address":"10.99.0.1"}`, "address 10.99.0.1 is outside pool 10.32.0.0/12"},
		{"IpamDriver.ReleaseAddress", `{"PoolID":"weave-10.32.0.0/12-10.32.0.0/12","Address":"10.32.9.9"}`, "10.32.9.9 in pool 10.32.0.0/12"},
		{"NetworkDriver.Teleport", `{}`, "unknown call /NetworkDriver.Teleport"},
	} {
		if got := h.fails(c.call, c.body); !strings.Contains(got, c.want) {
			t.Errorf("%s(%s): Err %q, want it to contain %q", c.call, c.body, got, c.want)
		}
	}
	if len(h.links.endpoints) != 0 {
		t.Errorf("failed calls left endpoints: %v", h.links.endpoints)
	}
}

func (h *harness) createNetwork(id string, multicast bool) {
	h.t.Helper()
	opts := map[string]any{"com.docker.network.enable_ipv6": false}
	if multicast {
		opts["com.docker.network.generic"] = map[string]any{MulticastOption: "true"}
	}
	h.mesh("NetworkDriver.CreateNetwork", map[string]any{
		"NetworkID": id, "Options": opts,
		"IPv4Data": []map[string]any{{"AddressSpace": LocalAddressSpace, "Pool": "10.32.0.0/12", "Gateway": "10.32.0.1/12"}},
	}, nil)
}

func TestStaleSocketReplacedLiveOneRefused(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "weave.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the file stays, nobody answers: a killed router's socket
	live := filepath.Join(dir, "live.sock")
	ll, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ll.Close()
	cfg := Config{NetSocket: stale, MeshSocket: filepath.Join(dir, "weavemesh.sock"),
		StateFile: filepath.Join(dir, "state.json"), Links: newFakeLinks()}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	p.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("Close left %s behind: %v", stale, err)
	}
	cfg.NetSocket = live
	p, _ = New(cfg)
	if err := p.Start(); err == nil || !strings.Contains(err.Error(), "another process is serving it") {
		p.Close()
		t.Fatalf("Start over a live socket: %v, want a refusal", err)
	}
	if _, err := os.Stat(cfg.MeshSocket); !os.IsNotExist(err) {
		t.Errorf("failed Start left %s behind", cfg.MeshSocket)
	}
}
