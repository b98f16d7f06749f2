package mesh

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	wmesh "github.com/weaveworks/mesh"
)

// testRouter is a real github.com/weaveworks/mesh Router on 127.0.0.1.
type testRouter struct {
	*wmesh.Router
	port int
	log  *syncBuffer
}

func (r *testRouter) addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

// startRouter starts a router on a free port. The library's Start panics
// when the port is taken (router.go listenTCP), so a lost race for the
// port is retried with a new one.
func startRouter(t *testing.T, name, nick string, password []byte) *testRouter {
	t.Helper()
	return startRouterOn(t, "127.0.0.1", name, nick, password)
}

// startRouterOn is startRouter listening on host ("" = every address of
// both families).
func startRouterOn(t *testing.T, host, name, nick string, password []byte) *testRouter {
	t.Helper()
	for range 5 {
		if r := tryStartRouter(t, host, name, nick, password); r != nil {
			return r
		}
	}
	t.Fatal("could not start a mesh router on a free port")
	return nil
}

func tryStartRouter(t *testing.T, host, name, nick string, password []byte) (tr *testRouter) {
	t.Helper()
	port := freePort(t)
	sink, l := newTestLogger()
	interval := 2 * time.Second
	cfg := wmesh.Config{Host: host, Port: port, Password: password, ConnLimit: 64,
		ProtocolMinVersion: wmesh.ProtocolMinVersion, PeerDiscovery: true, GossipInterval: &interval}
	r, err := wmesh.NewRouter(cfg, mustName(t, name), nick, wmesh.NullOverlay{}, Logger(l))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if p := recover(); p != nil {
			t.Logf("router start on port %d failed: %v", port, p)
			tr = nil
		}
	}()
	r.Start()
	// The patched Stop closes the listener and the connections.
	t.Cleanup(func() { _ = r.Stop() })
	return &testRouter{Router: r, port: port, log: sink}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitFor polls cond (there is no event to wait on: the library exposes
// state only as snapshots) until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func connStates(r *testRouter) []wmesh.LocalConnectionStatus {
	return wmesh.NewStatus(r.Router).Connections
}

func establishedTo(r *testRouter, addr string) bool {
	for _, c := range connStates(r) {
		if c.State == "established" && (addr == "" || c.Address == addr) {
			return true
		}
	}
	return false
}

func TestInteropTwoRoutersConnect(t *testing.T) {
	for _, pw := range [][]byte{nil, []byte("vector-secret")} {
		t.Run(fmt.Sprintf("password=%v", pw != nil), func(t *testing.T) {
			a := startRouter(t, "02:00:00:00:0a:01", "a", pw)
			b := startRouter(t, "02:00:00:00:0a:02", "b", pw)
			if errs := b.ConnectionMaker.InitiateConnections([]string{a.addr()}, false); len(errs) != 0 {
				t.Fatal(errs)
			}
			waitFor(t, 10*time.Second, "b established to a", func() bool { return establishedTo(b, a.addr()) })
			waitFor(t, 10*time.Second, "a established", func() bool { return establishedTo(a, "") })
			st := wmesh.NewStatus(a.Router)
			if st.Encryption != (pw != nil) {
				t.Errorf("status Encryption %v with password %v", st.Encryption, pw != nil)
			}
			if pw != nil && !strings.Contains(connStates(b)[0].Info, "encrypted") {
				t.Errorf("connection info %q does not say encrypted", connStates(b)[0].Info)
			}
			waitFor(t, 10*time.Second, "a knows b via topology", func() bool { return len(wmesh.NewStatus(a.Router).Peers) == 2 })
		})
	}
}

func TestInteropWrongPasswordNeverEstablishes(t *testing.T) {
	a := startRouter(t, "02:00:00:00:0b:01", "a", []byte("right"))
	b := startRouter(t, "02:00:00:00:0b:02", "b", []byte("wrong"))
	c := startRouter(t, "02:00:00:00:0b:03", "c", nil) // no password at all
	for _, r := range []*testRouter{b, c} {
		if errs := r.ConnectionMaker.InitiateConnections([]string{a.addr()}, false); len(errs) != 0 {
			t.Fatal(errs)
		}
	}
	// Whichever side fails to open the other's first sealed message says so
	// (the dialler on its target, the listener in its log); the other side
	// may only see the connection drop, depending on who reads first.
	waitFor(t, 10*time.Second, "the decrypt error on b's target or in a's log", func() bool {
		return targetError(b, a.addr(), "Unable to decrypt TCP msg") ||
			strings.Contains(a.log.String(), "Unable to decrypt TCP msg")
	})
	waitFor(t, 10*time.Second, "b's target shows a failure", func() bool {
		return targetError(b, a.addr(), "")
	})
	// Likewise for c (no password): the dialler may only see the reset and
	// retry seconds later, while a has already logged the mismatch.
	waitFor(t, 10*time.Second, "the crypto mismatch on c's target or in a's log", func() bool {
		return targetError(c, a.addr(), "encrypted connection") ||
			strings.Contains(a.log.String(), "peer requested an unencrypted connection")
	})
	for _, r := range []*testRouter{a, b, c} {
		if establishedTo(r, "") {
			t.Errorf("%s has an established connection: %+v", r.addr(), connStates(r))
		}
	}
	if !strings.Contains(a.log.String(), "connection shutting down due to error during handshake") {
		t.Errorf("a did not log the failed handshakes:\n%s", a.log.String())
	}
}

func targetError(r *testRouter, addr, text string) bool {
	for _, c := range connStates(r) {
		if c.Address == addr && c.State != "established" && c.Info != "" && strings.Contains(c.Info, text) {
			return true
		}
	}
	return false
}

// TestInteropNameCollisionIsWarned runs two routers with the same name and
// a third connected to both. The third sees two different peers claim one
// name ("Multiple connections to ... added to ..."), and a twin dialling
// the other fails its handshake with "peer names collision". Our Logger
// adapter must report both at WARN.
func TestInteropNameCollisionIsWarned(t *testing.T) {
	const shared = "02:00:00:00:0c:01"
	twin1 := startRouter(t, shared, "twin1", nil)
	twin2 := startRouter(t, shared, "twin2", nil)
	hub := startRouter(t, "02:00:00:00:0c:03", "hub", nil)
	if errs := hub.ConnectionMaker.InitiateConnections([]string{twin1.addr(), twin2.addr()}, false); len(errs) != 0 {
		t.Fatal(errs)
	}
	waitFor(t, 20*time.Second, "hub WARNs about two connections to "+shared, func() bool {
		return warnLine(hub.log.String(), "Multiple connections to "+shared)
	})
	if errs := twin1.ConnectionMaker.InitiateConnections([]string{twin2.addr()}, false); len(errs) != 0 {
		t.Fatal(errs)
	}
	waitFor(t, 20*time.Second, "a twin WARNs about the peer name collision", func() bool {
		return warnLine(twin1.log.String(), "peer names collision") || warnLine(twin2.log.String(), "peer names collision")
	})
	if warnLine(hub.log.String(), "connection accepted") {
		t.Error("ordinary lines must stay at INFO")
	}
	// mesh never retries a target that failed with a name collision.
	waitFor(t, 10*time.Second, "twin1's target to twin2 parked with the collision error", func() bool {
		return targetError(twin1, twin2.addr(), "peer names collision")
	})
}

func warnLine(log, text string) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "component=mesh") && strings.Contains(line, text) {
			return true
		}
	}
	return false
}
