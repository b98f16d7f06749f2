package mesh

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	wmesh "github.com/weaveworks/mesh"
)

// TestAcceptLoopBacksOffOnEMFILE: when Accept fails (here EMFILE under a
// low RLIMIT_NOFILE) the library's loop logged and retried at once, so it
// spun and flooded the log (>= 1000 lines in 2 s). The patched loop backs
// off (5 ms doubling to 1 s) through the rate-limited log. The router runs
// in a child process with a file limit of 48; the connections come from
// distinct addresses so the per-source limits do not refuse them first.
func TestAcceptLoopBacksOffOnEMFILE(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, out, stderr := startChildRouter(ctx, t, emfileChildEnv, port)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 80 { // more than the child's fd limit; the kernel backlog takes the rest
		c, err := dialFrom(randomLoopback(t), fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	var n int
	if _, err := fmt.Fscanf(out, "emfile %d\n", &n); err != nil {
		t.Fatalf("child report: %v\n%s", err, tail(stderr.String(), 2000))
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, tail(stderr.String(), 2000))
	}
	t.Logf("accept loop logged EMFILE %d times within the child's 2 s life", n)
	if n < 1 || n > 20 {
		t.Errorf("want between 1 and 20 EMFILE lines (backoff, rate-limited log), got %d", n)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// runEMFILEChild runs in the child of TestAcceptLoopSpinsOnEMFILE.
func runEMFILEChild(port string) {
	var p int
	fmt.Sscan(port, &p)
	lim := syscall.Rlimit{Cur: 48, Max: 48}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	cfg := wmesh.Config{Host: "127.0.0.1", Port: p, ConnLimit: 8, ProtocolMinVersion: 1}
	r, err := wmesh.NewRouter(cfg, wmesh.PeerName(0x020000000d06), "child", wmesh.NullOverlay{}, countingLogger{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	r.Start()
	fmt.Println("ready")
	time.Sleep(2 * time.Second)
	fmt.Printf("emfile %d\n", emfileLines.Load())
	os.Exit(0)
}

var emfileLines atomic.Int64

// countingLogger counts the EMFILE lines instead of writing them: the
// spinning loop produces hundreds of thousands per second.
type countingLogger struct{}

func (countingLogger) Printf(format string, args ...interface{}) {
	if msg := fmt.Sprintf(format, args...); strings.Contains(msg, "too many open files") {
		emfileLines.Add(1)
	} else {
		fmt.Fprintln(os.Stderr, msg)
	}
}
