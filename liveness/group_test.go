package liveness

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// mixed is a mesh of mixed underlay families on loopback, each router on
// a port of its own: A IPv4 only (127.x.y.1), B dual-stack (127.x.y.2 and
// ::1), C IPv6 only (::1), D dual-stack (127.x.y.4 and ::1). A and C have
// no family in common, as an IPv4-only and an IPv6-only host.
type mixed struct {
	t      *testing.T
	gs     [4]*Group
	seeds  []Seed
	prefix string
}

func freePort6(t *testing.T) int {
	t.Helper()
	for {
		u, err := net.ListenPacket("udp", "[::]:0")
		if err != nil {
			t.Fatalf("find a free port on [::]: %v", err)
		}
		port := u.LocalAddr().(*net.UDPAddr).Port
		l, err := net.Listen("tcp", net.JoinHostPort("::", strconv.Itoa(port)))
		_ = u.Close()
		if err == nil {
			_ = l.Close()
			return port
		}
	}
}

func newMixed(t *testing.T) *mixed {
	t.Helper()
	if l, err := net.ListenPacket("udp6", "[::1]:0"); err != nil {
		t.Fatalf("this host has no IPv6 loopback (::1): %v", err)
	} else {
		_ = l.Close()
	}
	m := &mixed{t: t, prefix: fmt.Sprintf("127.%d.%d.", 100+rand.IntN(100), rand.IntN(250))}
	var ports [4]int
	for i := range ports {
		ports[i] = freePort6(t)
		v4 := net.JoinHostPort(m.prefix+strconv.Itoa(i+1), strconv.Itoa(ports[i]))
		v6 := net.JoinHostPort("::1", strconv.Itoa(ports[i]))
		switch i {
		case 0:
			m.seeds = append(m.seeds, Seed{Name: name(i), Host: v4})
		case 2:
			m.seeds = append(m.seeds, Seed{Name: name(i), Host: v6})
		default: // as MeshSeeds lists a dual-stack peer: once per family
			m.seeds = append(m.seeds, Seed{Name: name(i), Host: v4}, Seed{Name: name(i), Host: v6})
		}
	}
	for i := range m.gs {
		log := slog.New(slog.DiscardHandler)
		if testing.Verbose() {
			log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("me", name(i))
		}
		cfg := Config{Name: name(i), Port: ports[i], Logger: log,
			Timing: Timing{JoinInterval: 200 * time.Millisecond}, Seeds: func() []Seed { return m.seeds }}
		v4 := m.prefix + strconv.Itoa(i+1)
		switch i {
		case 0:
			cfg.BindAddr, cfg.AdvertiseAddr = v4, v4
		case 2:
			cfg.BindAddr, cfg.AdvertiseAddr = "::1", "::1"
		default:
			cfg.AdvertiseAddr, cfg.AdvertiseAddr6 = v4, "::1"
		}
		g, err := NewGroup(cfg)
		if err != nil {
			t.Fatalf("start %s: %v", name(i), err)
		}
		m.gs[i] = g
	}
	t.Cleanup(func() {
		for _, g := range m.gs {
			_ = g.Close()
		}
	})
	return m
}

func (m *mixed) await(ctx context.Context, observer, peer int, s State) {
	m.t.Helper()
	if err := m.gs[observer].Await(ctx, name(peer), s); err != nil {
		m.t.Fatalf("%s's view of %s: %v", name(observer), name(peer), err)
	}
}

// A mixed mesh gets no false verdict: each family's membership holds only
// peers of that family, so every member can be probed. The IPv4-only and
// the IPv6-only router never see each other (no verdict: mesh's own
// detection applies), everyone else sees everyone alive, and nobody is
// suspected or declared dead past memberlist's longest suspicion timeout
// (with one membership for all, A and C were marked dead about 2 s after
// joining).
func TestMixedFamiliesNoFalseVerdict(t *testing.T) {
	start := time.Now()
	m := newMixed(t)
	ctx := timeout(t, 20*time.Second)
	for i := range 4 {
		for j := range 4 {
			if i != j && !(i == 0 && j == 2) && !(i == 2 && j == 0) {
				m.await(ctx, i, j, Alive)
			}
		}
	}
	t.Logf("all saw their families' peers alive %v after the start", time.Since(start).Round(time.Millisecond))
	if got := len(m.gs[1].Detectors()); got != 2 {
		t.Fatalf("a dual-stack router runs %d detectors, want 2", got)
	}
	if got := len(m.gs[0].Detectors()); got != 1 {
		t.Fatalf("an IPv4-only router runs %d detectors, want 1", got)
	}
	// Watch every detector for twice the longest suspicion timeout of the
	// largest membership (3 members) after all saw each other alive.
	window := 2 * m.gs[1].Detectors()[0].maxSuspicion(3)
	end := time.Now().Add(window)
	for time.Now().Before(end) {
		for i, g := range m.gs {
			for _, d := range g.Detectors() {
				if n := d.Transitions(Suspect) + d.Transitions(Dead); n > 0 {
					t.Fatalf("%s suspected or declared dead a live peer (%d times): %v", name(i), n, d.Peers())
				}
			}
			if s := g.Get(name(2 - i)); (i == 0 || i == 2) && s.State != Unknown {
				t.Fatalf("%s has a verdict on %s, with no family in common: %v", name(i), name(2-i), s)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	// B is in both memberships, each of one family only.
	b := m.gs[1].Detectors()
	for k, want := range [][]string{{name(0), name(1), name(3)}, {name(1), name(2), name(3)}} {
		var got []string
		for _, n := range b[k].ml.Members() {
			got = append(got, n.Name)
		}
		if fmt.Sprint(slices.Sorted(slices.Values(got))) != fmt.Sprint(want) {
			t.Errorf("B's %s membership: %v, want %v", []string{"IPv4", "IPv6"}[k], got, want)
		}
	}
}

// A peer is dead only when every membership we share with it says so: D
// losing its IPv6 detector is dead to C (IPv6 is all they share) but alive
// to B (IPv4 still answers); B killed outright is dead to all, within
// seconds, in each family.
func TestMixedFamiliesDeadOnlyWhenEveryFamilySaysSo(t *testing.T) {
	m := newMixed(t)
	ctx := timeout(t, 30*time.Second)
	for _, p := range [][2]int{{0, 1}, {0, 3}, {1, 3}, {2, 1}, {2, 3}, {3, 1}} {
		m.await(ctx, p[0], p[1], Alive)
		m.await(ctx, p[1], p[0], Alive)
	}
	_ = m.gs[3].Detectors()[1].Kill() // D's IPv6 membership only
	m.await(ctx, 2, 3, Dead)
	if err := m.gs[1].Detectors()[1].Await(ctx, name(3), Dead); err != nil {
		t.Fatalf("B's IPv6 detector: %v", err)
	}
	if s := m.gs[1].Get(name(3)); s.State != Alive {
		t.Fatalf("B's verdict on D with its IPv4 detector alive: %v, want alive", s)
	}
	if n := m.gs[1].Transitions(Dead); n != 0 {
		t.Fatalf("B counted %d deaths, want none (D still answers over IPv4)", n)
	}
	if s := m.gs[0].Get(name(3)); s.State != Alive {
		t.Fatalf("A's verdict on D: %v, want alive", s)
	}
	killed := time.Now()
	_ = m.gs[1].Kill()
	// C is left alone in the IPv6 membership, which still counts D's dead
	// detector: memberlist expects a confirmation nobody can give and
	// waits its longest suspicion timeout (6 x 3 x 400 ms = 7.2 s). A and
	// D (two in a membership: no confirmation expected) take the shortest.
	for _, i := range []int{0, 2, 3} {
		m.await(ctx, i, 1, Dead)
		bound := 6 * time.Second
		if i == 2 {
			bound = 15 * time.Second
		}
		if took := m.gs[i].Get(name(1)).Since.Sub(killed); took > bound {
			t.Errorf("%s saw B dead %v after the kill, want within %v", name(i), took, bound)
		} else {
			t.Logf("%s saw B dead %v after the kill", name(i), took.Round(time.Millisecond))
		}
	}
	if n := m.gs[0].Transitions(Dead); n != 1 {
		t.Errorf("A counted %d deaths, want 1 (B)", n)
	}
}

// The shared dual-stack socket hands each packet to its family's
// detector: an IPv4 packet never reaches the IPv6 membership.
func TestFamilyOfAddress(t *testing.T) {
	for _, c := range []struct {
		a    net.Addr
		want int
	}{
		{&net.UDPAddr{IP: net.ParseIP("10.0.0.1")}, 0},
		{&net.UDPAddr{IP: net.ParseIP("::ffff:10.0.0.1")}, 0},
		{&net.TCPAddr{IP: net.ParseIP("fd00::1")}, 1},
		{&net.UDPAddr{IP: net.ParseIP("::1")}, 1},
	} {
		if got := family(c.a); got != c.want {
			t.Errorf("family(%v) = %d, want %d", c.a, got, c.want)
		}
	}
	for _, c := range []struct {
		adv, host string
		want      bool
	}{
		{"10.0.0.1", "10.0.0.2", true}, {"10.0.0.1", "[fd00::2]:6785", false}, {"fd00::1", "10.0.0.2:6785", false},
		{"fd00::1", "fd00::2", true}, {"10.0.0.1", "host.example", true}, {"", "fd00::2", true},
	} {
		if got := sameFamily(c.adv, c.host); got != c.want {
			t.Errorf("sameFamily(%q, %q) = %v, want %v", c.adv, c.host, got, c.want)
		}
	}
}
