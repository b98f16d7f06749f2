package liveness

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// cluster is n detectors on 127.A.B.1..n, one shared port: the layout a
// real mesh has (one port, one address per host).
type cluster struct {
	t        *testing.T
	prefix   string
	port     int
	password []byte
	ds       []*Detector
	mu       sync.Mutex
	changes  map[string][]Change // by observer name
}

func newCluster(t *testing.T, n int, password string) *cluster {
	t.Helper()
	c := &cluster{t: t, password: []byte(password), changes: map[string][]Change{}}
	c.prefix = fmt.Sprintf("127.%d.%d.", 100+rand.IntN(100), rand.IntN(250))
	c.port = freePort(t, c.prefix+"1")
	c.ds = make([]*Detector, n)
	for i := range n {
		c.start(i)
	}
	t.Cleanup(func() {
		for _, d := range c.ds {
			if d != nil {
				_ = d.Close()
			}
		}
	})
	return c
}

func freePort(t *testing.T, host string) int {
	t.Helper()
	l, err := net.ListenPacket("udp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("find a free port on %s: %v", host, err)
	}
	defer l.Close()
	return l.LocalAddr().(*net.UDPAddr).Port
}

func name(i int) string { return fmt.Sprintf("aa:00:00:00:00:%02x", i+1) }

func (c *cluster) host(i int) string { return fmt.Sprintf("%s%d", c.prefix, i+1) }

// seeds lists every other peer, as the mesh would once connected.
func (c *cluster) seeds() []Seed {
	out := make([]Seed, len(c.ds))
	for i := range c.ds {
		out[i] = Seed{Name: name(i), Host: c.host(i)}
	}
	return out
}

func (c *cluster) start(i int) {
	c.t.Helper()
	me := name(i)
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("me", me)
	}
	d, err := New(Config{
		Name: me, BindAddr: c.host(i), AdvertiseAddr: c.host(i), Port: c.port, Password: c.password,
		Logger: log, Timing: Timing{JoinInterval: 200 * time.Millisecond},
		Seeds: c.seeds,
		OnChange: func(ch Change) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.changes[me] = append(c.changes[me], ch)
		},
	})
	if err != nil {
		c.t.Fatalf("start detector %d: %v", i, err)
	}
	c.ds[i] = d
}

// kill stops detector i without leaving: to the others it just vanishes,
// as a SIGKILLed router does.
func (c *cluster) kill(i int) {
	if err := c.ds[i].Kill(); err != nil {
		c.t.Fatalf("kill %d: %v", i, err)
	}
	c.ds[i] = nil
}

func (c *cluster) awaitAll(ctx context.Context, target int, s State) {
	c.t.Helper()
	for i, d := range c.ds {
		if d == nil || i == target {
			continue
		}
		if err := d.Await(ctx, name(target), s); err != nil {
			c.t.Fatalf("peer %d: %v", i, err)
		}
	}
}

func (c *cluster) awaitMesh(ctx context.Context) {
	c.t.Helper()
	for j := range c.ds {
		c.awaitAll(ctx, j, Alive)
	}
}

func (c *cluster) history(observer, peer int) []State {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []State
	for _, ch := range c.changes[name(observer)] {
		if ch.Peer == name(peer) {
			out = append(out, ch.To)
		}
	}
	return out
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestPeersJoinThroughSeedsAndSeeEachOtherAlive(t *testing.T) {
	c := newCluster(t, 4, "")
	c.awaitMesh(timeout(t, 20*time.Second))
	for i, d := range c.ds {
		if got := len(d.Peers()); got != 3 {
			t.Errorf("peer %d knows %d peers, want 3: %v", i, got, d.Peers())
		}
		if s := d.Get(name(i)); s.State != Unknown {
			t.Errorf("peer %d lists itself: %v", i, s)
		}
	}
}

func TestKilledPeerGoesSuspectThenDeadAndRejoins(t *testing.T) {
	c := newCluster(t, 4, "s3cret")
	c.awaitMesh(timeout(t, 20*time.Second))
	killedAt := time.Now()
	c.kill(3)
	c.awaitAll(timeout(t, 30*time.Second), 3, Dead)
	t.Logf("all peers declared the killed peer dead after %v", time.Since(killedAt).Round(time.Millisecond))
	suspected := 0
	for i := range 3 {
		// Await returns on the state; the change callback that records
		// the history may run a moment later.
		h := c.history(i, 3)
		for deadline := time.Now().Add(5 * time.Second); (len(h) == 0 || h[len(h)-1] != Dead) && time.Now().Before(deadline); h = c.history(i, 3) {
			time.Sleep(10 * time.Millisecond)
		}
		if len(h) < 2 || h[len(h)-1] != Dead {
			t.Errorf("peer %d saw %v for the killed peer; want ..., dead", i, h)
		}
		if slices.Contains(h, Suspect) {
			suspected++
		}
		s := c.ds[i].Get(name(3))
		if s.Since.Before(killedAt) {
			t.Errorf("peer %d: dead since %v, before the kill at %v", i, s.Since, killedAt)
		}
		if c.ds[i].Transitions(Dead) == 0 {
			t.Errorf("peer %d counted no transition to dead", i)
		}
	}
	if suspected == 0 {
		t.Error("no peer's prober suspected the killed peer before it was declared dead")
	}
	c.start(3)
	c.awaitAll(timeout(t, 20*time.Second), 3, Alive)
}

// A settled cluster is not polled every PollInterval (100 ms): only on
// memberlist's events and the backstop (2 s).
func TestQuietDetectorDoesNotPoll(t *testing.T) {
	c := newCluster(t, 3, "")
	c.awaitMesh(timeout(t, 20*time.Second))
	d := c.ds[0]
	before := d.polls.Load()
	time.Sleep(1500 * time.Millisecond) // the idle interval measured
	if n := d.polls.Load() - before; n > 3 {
		t.Errorf("%d polls in 1.5 s of a quiet cluster; want at most 3 (the 100 ms tick made 15)", n)
	}
	// and it still notices at once when something happens
	if err := c.ds[2].Close(); err != nil {
		t.Fatal(err)
	}
	c.ds[2] = nil
	c.awaitAll(timeout(t, 1500*time.Millisecond), 2, Dead)
}

func TestClosedPeerIsDeadAtOnce(t *testing.T) {
	c := newCluster(t, 3, "")
	c.awaitMesh(timeout(t, 20*time.Second))
	if err := c.ds[2].Close(); err != nil {
		t.Fatal(err)
	}
	c.ds[2] = nil
	// A graceful leave needs no suspicion timeout: well under the 2 s
	// minimum a killed peer takes.
	c.awaitAll(timeout(t, 1500*time.Millisecond), 2, Dead)
}

func TestWrongOrNoPasswordCannotJoin(t *testing.T) {
	c := newCluster(t, 2, "right")
	c.awaitMesh(timeout(t, 20*time.Second))
	for _, pw := range []string{"wrong", ""} {
		host := c.prefix + "9"
		d, err := New(Config{Name: "aa:00:00:00:00:09", BindAddr: host, AdvertiseAddr: host, Port: c.port, Password: []byte(pw)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Join(c.host(0)); err == nil {
			t.Errorf("password %q: joined a cluster keyed with another password", pw)
		}
		_ = d.Close()
		if s := c.ds[0].Get("aa:00:00:00:00:09"); s.State != Unknown {
			t.Errorf("password %q: outsider is %v to a member", pw, s.State)
		}
	}
}

func TestDeriveKey(t *testing.T) {
	a, b := DeriveKey([]byte("one")), DeriveKey([]byte("two"))
	if len(a) != 32 || string(a) == string(b) || string(a) != string(DeriveKey([]byte("one"))) {
		t.Fatalf("keys: %x %x", a, b)
	}
	if strings.Contains(string(a), "one") {
		t.Fatal("key contains the password")
	}
}

func TestMemberlistLinesMapToSlogLevels(t *testing.T) {
	for line, want := range map[string]slog.Level{
		"[DEBUG] memberlist: Stream connection from=1.2.3.4": slog.LevelDebug,
		"[INFO] memberlist: Marking x as failed":             slog.LevelInfo,
		"[WARN] memberlist: Was able to connect":             slog.LevelWarn,
		"[ERR] memberlist: Failed fallback ping":             slog.LevelWarn,
		"no prefix at all":                                   slog.LevelInfo,
	} {
		level, msg := parseLine(line)
		if level != want || strings.HasPrefix(msg, "[") || strings.HasPrefix(msg, "memberlist:") {
			t.Errorf("%q: level %v msg %q, want level %v without prefixes", line, level, msg, want)
		}
	}
}

func TestStateStrings(t *testing.T) {
	for s, want := range map[State]string{Unknown: "unknown", Alive: "alive", Suspect: "suspect", Dead: "dead", 9: "state(9)"} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", int(s), s.String(), want)
		}
	}
}

func TestSuspectLineIsRecognised(t *testing.T) {
	// The exact line memberlist v0.7.0's prober logs (state.go, probeNode).
	_, msg := parseLine("[INFO] memberlist: Suspect aa:00:00:00:00:02 has failed, no acks received")
	if p, ok := suspectedPeer(msg); !ok || p != "aa:00:00:00:00:02" {
		t.Fatalf("suspectedPeer(%q) = %q, %v", msg, p, ok)
	}
	if _, ok := suspectedPeer("Marking aa as failed, suspect timeout reached"); ok {
		t.Fatal("a failure line taken for a suspicion")
	}
}

// TestProbeRTTIsRecordedAndForgottenOnLeave: each detector learns the
// round trip of its direct probes to the other, a small positive time on
// loopback; it is forgotten when the peer leaves, and an unknown peer
// has none.
func TestProbeRTTIsRecordedAndForgottenOnLeave(t *testing.T) {
	c := newCluster(t, 2, "")
	c.awaitMesh(timeout(t, 20*time.Second))
	deadline := time.Now().Add(15 * time.Second)
	for i, d := range c.ds {
		other := name(1 - i)
		for {
			rtt, ok := d.RTT(other)
			if ok {
				if rtt <= 0 || rtt > 5*time.Second {
					t.Fatalf("peer %d: RTT to %s = %v, want a small positive time", i, other, rtt)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("peer %d: no probe RTT to %s after 15 s", i, other)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, ok := c.ds[0].RTT("aa:00:00:00:00:99"); ok {
		t.Error("RTT to a peer never seen")
	}
	if err := c.ds[1].Close(); err != nil {
		t.Fatal(err)
	}
	c.ds[1] = nil
	c.awaitAll(timeout(t, 5*time.Second), 1, Dead)
	if rtt, ok := c.ds[0].RTT(name(1)); ok {
		t.Errorf("RTT %v still reported for a peer that left", rtt)
	}
}

// TestRTTIsSmoothed: the first sample is taken as is, later ones move
// the average by an eighth of the difference; non-positive ones are
// ignored.
func TestRTTIsSmoothed(t *testing.T) {
	d := &Detector{rtts: map[string]time.Duration{}}
	d.recordRTT("p", 0)
	if _, ok := d.RTT("p"); ok {
		t.Fatal("a zero sample was recorded")
	}
	d.recordRTT("p", 800*time.Microsecond)
	if rtt, _ := d.RTT("p"); rtt != 800*time.Microsecond {
		t.Fatalf("first sample: %v", rtt)
	}
	d.recordRTT("p", 1600*time.Microsecond)
	if rtt, _ := d.RTT("p"); rtt != 900*time.Microsecond {
		t.Fatalf("after a 1.6 ms sample: %v, want 900µs", rtt)
	}
}
