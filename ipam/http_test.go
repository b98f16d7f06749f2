package ipam

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func do(t *testing.T, h http.Handler, method, url string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, url, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func TestHTTPRoutes(t *testing.T) {
	n := newMemNet(t, 31)
	a := n.addPeer(1, consensus(1))
	n.addPeer(2, consensus(1))
	h := a.Handler()
	steps := []struct {
		method, url string
		code        int
		body        string
	}{
		{"GET", "/ipinfo/defaultsubnet", 200, "10.32.0.0/12"},
		{"GET", "/ring", 200, ""},
		{"POST", "/ip/c1", 200, "10.32.0.1/12"},
		{"POST", "/ip/c1", 200, "10.32.0.1/12"},
		{"GET", "/ip/c1", 200, "10.32.0.1/12"},
		{"POST", "/ip/c2/10.32.0.0/24", 200, "10.32.0.2/24"},
		{"GET", "/ip/c2/10.32.0.0/24", 200, "10.32.0.2/24"},
		{"PUT", "/ip/c3/10.32.0.200/12", 204, ""},
		{"PUT", "/ip/c4/10.32.0.200/12", 400, "Unable to claim: "},
		{"PUT", "/ip/c4/10.32.0/12", 400, "parse CIDR"},
		{"PUT", "/ip/c6/10.32.0.0/12", 400, "10.32.0.0 is the network address of 10.32.0.0/12"},
		{"PUT", "/ip/c6/10.47.255.255/12", 400, "10.47.255.255 is the broadcast address of 10.32.0.0/12"},
		{"PUT", "/ip/c6/10.32.1.0/24", 400, "network address"},
		{"POST", "/ip/a%2Fb", 400, "not a name, ID or absolute namespace path"},
		{"PUT", "/ip/a%2Fb/10.32.0.9/12", 400, "invalid container ID"},
		{"POST", "/ip/c5/10.32.0.1/12", 400, "not a network address"},
		{"POST", "/ip/c5/192.168.0.0/24", 400, "outside"},
		{"GET", "/ip", 200, `"containerid":"c1","addrs":["10.32.0.1/12"]`},
		{"DELETE", "/ip/c1/10.32.0.1", 204, ""},
		{"DELETE", "/ip/c1/10.32.0.1", 400, "Unable to free: "},
		{"GET", "/ip/c1", 200, ""},
		{"DELETE", "/ip/c2", 204, ""},
		{"DELETE", "/ip/c2", 400, "Delete: no addresses for c2"},
		{"DELETE", "/ip/c3/not-an-ip", 400, ""},
		{"DELETE", "/peer/nosuch", 200, "0 IPs taken over from nosuch\n"},
		{"DELETE", "/peer/0a:00:00:00:00:01", 400, "run 'weave reset' on this host"},
		{"DELETE", "/peer/0a:00:00:00:00:02", 409, "still reachable; run 'weave reset' on that host"},
		{"GET", "/status/ipam", 200, "(1 active)"},
		{"DELETE", "/peer", 204, ""},
		{"POST", "/ip/c9", 503, "shut down (weave reset)"},
	}
	for _, s := range steps {
		code, body := do(t, h, s.method, s.url)
		if code != s.code || !strings.Contains(body, s.body) || (s.body == "" && s.method == "GET" && body != "") {
			t.Fatalf("%s %s = %d %q, want %d containing %q", s.method, s.url, code, body, s.code, s.body)
		}
	}
}

// TestUnsafeIdentsRefused: container IDs that are path elements of their
// own ("..", "a/b") are refused before they reach any state.
func TestUnsafeIdentsRefused(t *testing.T) {
	for _, id := range []string{".", "..", "a/b", `a\b`, "../../etc/passwd", "/var/run/netns/../x", "/x/", ""} {
		if err := checkIdent(id); !errors.Is(err, ErrBadIdent) {
			t.Errorf("checkIdent(%q) = %v, want ErrBadIdent", id, err)
		}
	}
	for _, id := range []string{"weave:expose", "c1", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "my.container_1-2", "/var/run/netns/ns1"} {
		if err := checkIdent(id); err != nil {
			t.Errorf("checkIdent(%q) = %v", id, err)
		}
	}
}
