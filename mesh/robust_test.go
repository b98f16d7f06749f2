package mesh

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	wmesh "github.com/weaveworks/mesh"
)

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func be32(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// sendGarbage writes data, half-closes, and waits (bounded) for the router
// to close its end. It returns the local address, which the router logs
// as the remote address of the failed connection.
func sendGarbage(t *testing.T, addr string, data []byte) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(15 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(data); err != nil {
		t.Logf("write (router may already have closed): %v", err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	if _, err := io.Copy(io.Discard, c); err != nil && !isReset(err) {
		t.Fatalf("router did not close the connection: %v", err)
	}
	return c.LocalAddr().String()
}

func isReset(err error) bool { return strings.Contains(err.Error(), "connection reset") }

// TestRobustnessGarbage throws malformed input at a live router's TCP port
// and checks each attempt is rejected with the expected handshake error
// and that a real peer can still connect afterwards.
func TestRobustnessGarbage(t *testing.T) {
	skipUnderRace(t)
	victim := startRouter(t, "02:00:00:00:0d:01", "victim", nil)
	hdr, flag := EncodeProtocolHeader(1, 2), []byte{0}
	emptyMap, err := EncodeFeatures(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		data       []byte
	}{
		{"random bytes", "remote protocol header not recognised", randomBytes(t, 4096)},
		{"truncated header", "incomplete remote protocol header", []byte("wea")},
		{"no bytes", "failed to receive remote protocol header", nil},
		{"versions 255,255", "incompatible", []byte("weave\xff\xff")},
		{"versions 2,1", "incompatible", []byte("weave\x02\x01")},
		{"versions 0,0", "incompatible", []byte("weave\x00\x00")},
		{"header then junk flag", "Bad encryption flag", cat(hdr, []byte{0x7f}, randomBytes(t, 64))},
		{"length prefix 2^31", "exceeds maximum size", cat(hdr, flag, be32(1<<31))},
		{"length prefix 10MiB+1", "exceeds maximum size", cat(hdr, flag, be32(MaxTCPMsgSize+1))},
		{"truncated frame", "EOF", cat(hdr, flag, be32(171), randomBytes(t, 10))},
		{"features not gob", "", cat(hdr, flag, be32(64), randomBytes(t, 64))},
		{"features empty map", "missing", cat(hdr, flag, be32(uint32(len(emptyMap))), emptyMap)},
		{"v1 gob junk", "", cat([]byte("weave\x01\x01"), randomBytes(t, 256))},
	}
	for _, tc := range cases {
		local := sendGarbage(t, victim.addr(), tc.data)
		line := "->[" + local + "] connection shutting down due to error during handshake: "
		waitFor(t, 5*time.Second, tc.name+" logged", func() bool {
			return strings.Contains(victim.log.String(), line)
		})
		if got := lineWith(victim.log.String(), line); !strings.Contains(got, tc.want) {
			t.Errorf("%s: logged %q, want %q", tc.name, got, tc.want)
		}
	}
	assertStillAcceptsPeer(t, victim)
	if testing.Verbose() {
		t.Logf("victim log:\n%s", victim.log.String())
	}
}

func lineWith(log, text string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, text) {
			return l
		}
	}
	return ""
}

func assertStillAcceptsPeer(t *testing.T, victim *testRouter) time.Duration {
	t.Helper()
	start := time.Now()
	peer := startRouter(t, fmt.Sprintf("02:00:00:00:0e:%02x", time.Now().UnixNano()&0xff), "peer", nil)
	if errs := peer.ConnectionMaker.InitiateConnections([]string{victim.addr()}, false); len(errs) != 0 {
		t.Fatal(errs)
	}
	waitFor(t, 30*time.Second, "real peer established after garbage", func() bool { return establishedTo(peer, victim.addr()) })
	return time.Since(start)
}

// TestRobustnessConnectionFlood opens many connections at once (bounded:
// 50 idle plus 50 junk, all closed by the test) and checks a real peer
// still gets in. The library only rate-limits accept (20 burst, then one
// per 50 ms, router.go acceptMaxTokens/acceptTokenDelay) and lets an idle
// connection hold a goroutine for headerTimeout (10 s), so a flood delays
// legitimate peers; the delay is logged.
func TestRobustnessConnectionFlood(t *testing.T) {
	skipUnderRace(t)
	victim := startRouter(t, "02:00:00:00:0d:02", "victim", nil)
	var idle []net.Conn
	t.Cleanup(func() {
		for _, c := range idle {
			c.Close()
		}
	})
	for range 50 {
		c, err := net.DialTimeout("tcp", victim.addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", victim.addr(), 10*time.Second)
			if err != nil {
				return // the backlog may overflow; that is part of the flood
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = c.Write([]byte("weave\x01\x02\x00\xff\xff\xff\xff"))
		})
	}
	wg.Wait()
	took := assertStillAcceptsPeer(t, victim)
	t.Logf("real peer established %v after a flood of 100 connections", took)
}

// TestRobustnessPreAuthAllocation shows the receive-side amplification: a
// V2 length prefix makes the router allocate the whole body (up to 10 MiB)
// before one body byte arrives (protocol_crypto.go lengthPrefixTCPReceiver
// .Receive), and the read deadline during the intro is 60 s.
func TestRobustnessPreAuthAllocation(t *testing.T) {
	skipUnderRace(t)
	victim := startRouter(t, "02:00:00:00:0d:03", "victim", nil)
	const n = 8
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := net.DialTimeout("tcp", victim.addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write(cat(EncodeProtocolHeader(1, 2), []byte{0}, be32(MaxTCPMsgSize))); err != nil {
			t.Fatal(err)
		}
	}
	// Each connection is "waiting for its features" once both sides' header
	// and flag were exchanged; read what the router sent to know that.
	for _, c := range conns {
		buf := make([]byte, ProtocolHeaderLen+1)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	var grew uint64
	waitFor(t, 5*time.Second, "buffers allocated", func() bool {
		runtime.ReadMemStats(&after)
		grew = after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
		return grew >= n*MaxTCPMsgSize*9/10
	})
	t.Logf("%d connections sending 16 bytes each made the router allocate %d MiB", n, grew>>20)
	assertStillAcceptsPeer(t, victim)
}

// TestRobustnessStopLeavesListener documents that Router.Stop neither
// closes the listener nor the connections (router.go Stop is a TODO).
func TestRobustnessStopLeavesListener(t *testing.T) {
	skipUnderRace(t)
	r := startRouter(t, "02:00:00:00:0d:04", "stopped", nil)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", r.addr(), 5*time.Second)
	if err != nil {
		t.Fatalf("listener closed after Stop (library fixed?): %v", err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, ProtocolHeaderLen)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf[:5]) != ProtocolMagic {
		t.Fatalf("stopped router did not answer the handshake: %q %v", buf, err)
	}
}

const panicChildEnv = "WEAVE_MESH_PANIC_CHILD"

// TestMinVersionZeroPanics proves why CheckRouterConfig rejects
// ProtocolMinVersion 0: a child process runs a router with the zero-value
// config and one 7-byte header from the network kills it.
func TestMinVersionZeroPanics(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, _, stderr := startChildRouter(ctx, t, panicChildEnv, port)
	sendGarbage(t, fmt.Sprintf("127.0.0.1:%d", port), []byte("weave\x00\x00"))
	err := cmd.Wait()
	if err == nil || !strings.Contains(stderr.String(), "unhandled protocol version") {
		t.Fatalf("want the child to panic with 'unhandled protocol version', got %v:\n%s", err, stderr.String())
	}
}

// startChildRouter re-runs the test binary as a child whose TestMain
// starts a router on port (selected by env), and waits for its "ready"
// line. The child's stdout stays readable for further reports.
func startChildRouter(ctx context.Context, t *testing.T, env string, port int) (*exec.Cmd, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", env, port))
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("child not ready: %q %v %s", line, err, stderr.String())
	}
	return cmd, out, stderr
}

// runPanicChild runs in the child process of TestMinVersionZeroPanics.
func runPanicChild(port string) {
	var p int
	fmt.Sscan(port, &p)
	cfg := wmesh.Config{Host: "127.0.0.1", Port: p, ConnLimit: 8} // ProtocolMinVersion left 0
	r, err := wmesh.NewRouter(cfg, wmesh.PeerName(0x020000000d05), "child", wmesh.NullOverlay{}, Logger(nil))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	r.Start()
	fmt.Println("ready")
	time.Sleep(20 * time.Second) // the parent's header should kill us long before
	os.Exit(0)
}
