package mesh

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/testutil"
	wmesh "github.com/weaveworks/mesh"
)

// The attacks of issue 9 against a router in a child process. The child's
// address space is capped (RLIMIT_AS, without -race) and the parent kills
// it when its RSS passes attackRSSKill, so a regression (for example a
// build of github.com/weaveworks/mesh without weave's patch) fails the test
// instead of taking the machine to out-of-memory.

const (
	attackChildEnv   = "WEAVE_MESH_ATTACK_CHILD"
	attackPasswdEnv  = "WEAVE_MESH_ATTACK_PASSWORD"
	attackRSSKill    = 400 << 20 // watchdog: kill the child above this RSS
	attackRSSGrowth  = 64 << 20  // allowed peak RSS growth during the attacks
	attackAddrSpace  = 1 << 30   // RLIMIT_AS headroom over the child's start
	attackCloseAfter = 5 * time.Second
)

// mapBomb is a features message (two gob messages: the map[string]string
// type definition, then a value) whose map declares count entries and
// carries none.
func mapBomb(count uint64) []byte {
	def := appendGobMessage(nil, appendGobInt(nil, -65), mapTypeDef(65))
	val := appendGobUint(appendGobUint(appendGobInt(nil, 65), 0), count)
	return appendGobMessage(def, nil, val)
}

// attackV1MapBomb is the 34-byte message of issue 9.
func attackV1MapBomb() []byte { return cat([]byte("weave\x01\x01"), mapBomb(1<<26)) }

func attackV2MapBomb() []byte {
	b := mapBomb(1 << 26)
	return cat(EncodeProtocolHeader(1, 2), []byte{0}, be32(uint32(len(b))), b)
}

type attack struct {
	name, want string // want: text of the router's handshake error
	data       []byte
}

func attacks() []attack {
	return []attack{
		{"v1 features map of 2^26 entries (34 bytes)", "EOF", attackV1MapBomb()},
		{"v2 features map of 2^26 entries", "EOF", attackV2MapBomb()},
		{"v2 features length 10 MiB, no body", "exceeds maximum size", cat(EncodeProtocolHeader(1, 2), []byte{0}, be32(MaxTCPMsgSize))},
		{"v1 gob message of 1 GiB, no body", "exceeds maximum size", cat([]byte("weave\x01\x01"), appendGobUint(nil, 1<<30))},
	}
}

func TestAttacksUnderMemoryLimit(t *testing.T) {
	for _, pw := range []string{"", "s3cret"} {
		t.Run(fmt.Sprintf("password=%v", pw != ""), func(t *testing.T) {
			child := startAttackChild(t, pw)
			base := child.peakRSS(t)
			for i, a := range attacks() {
				errs := make([]error, 8)
				var wg sync.WaitGroup
				for j := range errs {
					wg.Go(func() { errs[j] = child.hit(fmt.Sprintf("127.0.%d.%d", 10+i, 10+j), a.data) })
				}
				wg.Wait()
				child.alive(t)
				if err := errors.Join(errs...); err != nil {
					t.Errorf("%s: %v", a.name, err)
				}
			}
			grew := child.peakRSS(t) - base
			t.Logf("peak RSS %d MiB before, grew by %d KiB over %d attack connections", base>>20, grew>>10, 8*len(attacks()))
			if grew > attackRSSGrowth {
				t.Errorf("router's peak RSS grew by %d MiB during the attacks (limit %d MiB); %s", grew>>20, attackRSSGrowth>>20, unpatchedHint)
			}
			for _, a := range attacks() {
				if !strings.Contains(child.log.String(), a.want) {
					t.Errorf("%s: router never logged %q:\n%s", a.name, a.want, tail(child.log.String(), 3000))
				}
			}
		})
	}
}

// attackChild is a router in a child process, watched for memory.
type attackChild struct {
	cmd    *exec.Cmd
	addr   string
	log    *syncBuffer
	killed atomic.Int64 // RSS at which the watchdog killed the child
	exited chan struct{}
	err    error
}

func startAttackChild(t *testing.T, password string) *attackChild {
	t.Helper()
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	c := &attackChild{addr: fmt.Sprintf("127.0.0.1:%d", port), log: new(syncBuffer), exited: make(chan struct{})}
	c.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", attackChildEnv, port), attackPasswdEnv+"="+password)
	c.cmd.Stderr = c.log
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-c.exited })
	go func() { c.err = c.cmd.Wait(); close(c.exited) }()
	go c.watch(ctx)
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("child not ready: %q %v %s", line, err, c.log.String())
	}
	return c
}

// watch kills the child when its RSS passes attackRSSKill.
func (c *attackChild) watch(ctx context.Context) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.exited:
			return
		case <-tick.C:
		}
		if rss, err := procStatusKB(c.cmd.Process.Pid, "VmRSS"); err == nil && rss<<10 > attackRSSKill {
			c.killed.Store(rss << 10)
			_ = c.cmd.Process.Kill()
			return
		}
	}
}

// alive fails the test if the child died or was killed.
func (c *attackChild) alive(t *testing.T) {
	t.Helper()
	select {
	case <-c.exited:
		if rss := c.killed.Load(); rss != 0 {
			t.Fatalf("router child killed at RSS %d MiB (limit %d MiB); %s", rss>>20, attackRSSKill>>20, unpatchedHint)
		}
		t.Fatalf("router child died: %v; %s\n%s", c.err, unpatchedHint, tail(c.log.String(), 3000))
	default:
	}
}

func (c *attackChild) peakRSS(t *testing.T) int64 {
	t.Helper()
	c.alive(t)
	kb, err := procStatusKB(c.cmd.Process.Pid, "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	return kb << 10
}

// hit sends data from source address src and requires the router to
// close the connection within attackCloseAfter.
func (c *attackChild) hit(src string, data []byte) error {
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	conn, err := d.Dial("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("dial from %s: %w", src, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(attackCloseAfter))
	_, _ = conn.Write(data)
	if _, err = io.Copy(io.Discard, conn); err != nil && !isReset(err) {
		return fmt.Errorf("router did not close the connection from %s within %v (%w); %s", src, attackCloseAfter, err, unpatchedHint)
	}
	return nil
}

func procStatusKB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// runAttackChild runs in the child of startAttackChild.
func runAttackChild(port string) {
	p, _ := strconv.Atoi(port)
	if !testutil.RaceEnabled { // the race runtime reserves terabytes of address space
		if kb, err := procStatusKB(os.Getpid(), "VmSize"); err == nil {
			lim := uint64(kb<<10) + attackAddrSpace
			_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim})
		}
	}
	var pw []byte
	if s := os.Getenv(attackPasswdEnv); s != "" {
		pw = []byte(s)
	}
	cfg := wmesh.Config{Host: "127.0.0.1", Port: p, Password: pw, ConnLimit: 64, ProtocolMinVersion: 1}
	l := slog.New(slog.NewTextHandler(os.Stderr, nil))
	r, err := wmesh.NewRouter(cfg, wmesh.PeerName(0x020000000d07), "attacked", wmesh.NullOverlay{}, Logger(l))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	r.Start()
	fmt.Println("ready")
	time.Sleep(5 * time.Minute) // the parent kills us when done
	os.Exit(0)
}
