package meshsim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seedf75a49c6/weave/liveness"
)

// Await polls cond (which names what is still missing, or returns "")
// every 100 ms, or four times as long as cond took (checking hundreds of
// routers' views of each other is O(n^2) and should not starve them),
// until it holds or ctx ends, and returns how long it took. mesh offers
// no convergence event, so polling is the only way.
func Await(ctx context.Context, what string, cond func() string) (time.Duration, error) {
	start := time.Now()
	for {
		t0 := time.Now()
		problem := cond()
		if problem == "" {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("%s not reached after %v: %s", what, time.Since(start).Round(time.Millisecond), problem)
		case <-time.After(max(100*time.Millisecond, 4*time.Since(t0))):
		}
	}
}

// TopologyProblem is "" when every live peer has a route to every other
// live peer and none to a killed one.
func (s *Sim) TopologyProblem() string {
	alive := s.Alive()
	for _, p := range alive {
		for _, q := range s.Peers {
			if q == p {
				continue
			}
			if _, has := p.Mesh.Routes.Unicast(q.Name); has == q.killed {
				return fmt.Sprintf("peer %s route to %s (killed %v): %v", p.NickName, q.NickName, q.killed, has)
			}
		}
	}
	return ""
}

// LivenessProblem is "" when every live peer sees every other live peer
// alive (or suspect: a suspicion is not a verdict) and every killed peer
// dead.
func (s *Sim) LivenessProblem() string {
	first, wrong := "", 0
	for _, p := range s.Alive() {
		for _, q := range s.Peers {
			if q == p {
				continue
			}
			want := liveness.Alive
			if q.killed {
				want = liveness.Dead
			}
			got := p.Live.Get(q.Name.String()).State
			if got == liveness.Suspect && want == liveness.Alive {
				got = liveness.Alive
			}
			if got != want {
				if wrong++; first == "" {
					first = fmt.Sprintf("peer %s sees %s %s, want %s", p.NickName, q.NickName, got, want)
				}
			}
		}
	}
	if wrong == 0 {
		return ""
	}
	return fmt.Sprintf("%d wrong views, e.g. %s", wrong, first)
}

// RingProblem is "" when every live peer has the same non-empty IPAM
// ring and no killed peer holds tokens in it.
func (s *Sim) RingProblem() string {
	var first string
	for k, p := range s.Alive() {
		ring := ringKey(p)
		if ring == "" {
			return fmt.Sprintf("peer %s has no ring", p.NickName)
		}
		if k == 0 {
			first = ring
		} else if ring != first {
			return fmt.Sprintf("peer %s's ring differs from the first live peer's", p.NickName)
		}
	}
	for _, q := range s.Peers {
		if q.killed && strings.Contains(first, q.Name.String()) {
			return fmt.Sprintf("killed peer %s still holds tokens", q.NickName)
		}
	}
	return ""
}

func ringKey(p *Peer) string {
	var parts []string
	for _, e := range p.IPAM.Status().Entries {
		parts = append(parts, fmt.Sprintf("%s/%d=%s", e.Token, e.Size, e.Peer))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// bytesAcked matches ss -i's per-socket count of bytes sent and acked.
var bytesAcked = regexp.MustCompile(`bytes_acked:(\d+)`)

// TCPBytesSent sums, over every established TCP socket of the Loopback
// block to or from the shared mesh port, the bytes it sent (ss -ti
// bytes_acked): mesh's topology and IPAM gossip and heartbeats, not
// liveness' short push/pull connections (their counts vanish with them).
// Sockets closed meanwhile are not counted, so measure over a steady
// window. Needs ss (iproute2).
func (s *Sim) TCPBytesSent() (uint64, error) {
	if !s.opts.Loopback {
		return 0, fmt.Errorf("meshsim: TCPBytesSent needs Loopback")
	}
	block := fmt.Sprintf("127.%d.0.0/16", s.base[0])
	port := ":" + strconv.Itoa(s.port)
	out, err := exec.Command("ss", "-tinH", "state", "established", "src", block,
		"(", "sport", "=", port, "or", "dport", "=", port, ")").Output()
	if err != nil {
		return 0, fmt.Errorf("ss: %w", err)
	}
	var total uint64
	for _, m := range bytesAcked.FindAllStringSubmatch(string(out), -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		total += n
	}
	return total, nil
}

// MeshConnections counts the established TCP connections to the shared
// mesh port in the Loopback block (each mesh connection once, at its
// accepting end). Needs ss (iproute2).
func (s *Sim) MeshConnections() (int, error) {
	if !s.opts.Loopback {
		return 0, fmt.Errorf("meshsim: MeshConnections needs Loopback")
	}
	block := fmt.Sprintf("127.%d.0.0/16", s.base[0])
	out, err := exec.Command("ss", "-tnH", "state", "established", "src", block, "sport", "= :"+strconv.Itoa(s.port)).Output()
	if err != nil {
		return 0, fmt.Errorf("ss: %w", err)
	}
	return strings.Count(string(out), "\n"), nil
}

// Suspicions sums, over every live peer's detector, how many times it
// saw a peer become suspect.
func (s *Sim) Suspicions() uint64 {
	var total uint64
	for _, p := range s.Alive() {
		if p.Live != nil {
			total += p.Live.Transitions(liveness.Suspect)
		}
	}
	return total
}

// LivenessPacketBytes sums the UDP bytes every live peer's detector sent.
func (s *Sim) LivenessPacketBytes() uint64 {
	var total uint64
	for _, p := range s.Alive() {
		if p.Live != nil {
			total += p.Live.PacketBytesSent()
		}
	}
	return total
}

// HeapInuse returns the process's live heap after a GC.
func HeapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// ProcStatus returns VmRSS and VmHWM (bytes) of process pid ("self" for
// this one) from /proc/<pid>/status.
func ProcStatus(pid string) (rss, hwm uint64, err error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v << 10
		case "VmHWM:":
			hwm = v << 10
		}
	}
	return rss, hwm, nil
}

// TopologyDiagnosis explains the first pair TopologyProblem finds: the
// version of the missing peer's record that the peer lacking the route
// holds, against the missing peer's own, and how many of (up to) 20 live
// peers hold its current record (few: its gossip is slow to spread; most:
// the routes are slow to follow). For logs of a stuck run; each look-up
// waits for that router's route calculation, so it samples.
func (s *Sim) TopologyDiagnosis() string {
	for _, p := range s.Alive() {
		for _, q := range s.Peers {
			if q == p {
				continue
			}
			if _, has := p.Mesh.Routes.Unicast(q.Name); has == q.killed {
				own := q.Mesh.Peers.Fetch(q.Name)
				if own == nil {
					return fmt.Sprintf("%s does not know itself", q.NickName)
				}
				cur, holders, known := own.Version, 0, 0
				held := "unknown"
				sample := s.Alive()
				if len(sample) > 20 {
					sample = append(sample[:19:19], p)
				}
				for _, r := range sample {
					if rec := r.Mesh.Peers.Fetch(q.Name); rec != nil {
						known++
						if rec.Version >= cur {
							holders++
						}
						if r == p {
							held = fmt.Sprintf("v%d", rec.Version)
						}
					}
				}
				return fmt.Sprintf("%s holds %s's record at %s, %s is at v%d; %d of %d sampled peers know it, %d hold v%d or later",
					p.NickName, q.NickName, held, q.NickName, cur, known, len(sample), holders, cur)
			}
		}
	}
	return ""
}
