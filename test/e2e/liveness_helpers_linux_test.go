//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// livenessTimeout bounds every wait for a liveness state; detection itself
// is measured, not bounded, by it.
const livenessTimeout = 30 * time.Second

// liveEntry is one peer's liveness in /report.
type liveEntry struct {
	State string
	Since time.Time
}

type livenessReport struct {
	Router struct {
		Liveness map[string]liveEntry
	}
	LivenessTransitions map[string]uint64 // not in JSON: read from /metrics
}

// liveness reads host i's liveness view from /report.
func (ic *ipamCluster) liveness(i int) (map[string]liveEntry, error) {
	code, body, err := ic.routerGET(i, "/report")
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, fmt.Errorf("GET /report on h%d: %d %s", i, code, body)
	}
	var r livenessReport
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return nil, fmt.Errorf("decode /report of h%d: %w", i, err)
	}
	return r.Router.Liveness, nil
}

// awaitLiveness waits until every observer reports target in state and
// returns, per observer, since when.
func (ic *ipamCluster) awaitLiveness(t *testing.T, observers []int, target int, state string) map[int]time.Time {
	t.Helper()
	out := map[int]time.Time{}
	what := fmt.Sprintf("h%d %s on %v", target, state, observers)
	netnstest.WaitFor(t, livenessTimeout, what, func() error {
		for _, o := range observers {
			if _, ok := out[o]; ok {
				continue
			}
			l, err := ic.liveness(o)
			if err != nil {
				return err
			}
			if e := l[peerName(target)]; e.State == state {
				out[o] = e.Since
			} else {
				return fmt.Errorf("h%d sees h%d as %q", o, target, e.State)
			}
		}
		return nil
	})
	return out
}

// transitions reads host i's weave_liveness_transitions_total{state}.
func (ic *ipamCluster) transitions(i int, state string) (uint64, error) {
	code, body, err := ic.routerGET(i, "/metrics")
	if err != nil || code != 200 {
		return 0, fmt.Errorf("GET /metrics on h%d: %d %v", i, code, err)
	}
	re := regexp.MustCompile(`(?m)^weave_liveness_transitions_total\{state="` + state + `"\} (\d+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("h%d /metrics has no liveness %s counter", i, state)
	}
	return strconv.ParseUint(m[1], 10, 64)
}

func others(n int, except ...int) []int {
	var out []int
	for i := 1; i <= n; i++ {
		if !slices.Contains(except, i) {
			out = append(out, i)
		}
	}
	return out
}

// pinger is a continuous ping whose losses are counted from the reply
// sequence numbers, so the one echo in flight when it is stopped is not a
// loss.
type pinger struct {
	what string
	p    *netnstest.Proc
}

func (ic *ipamCluster) startPinger(what, ns, ip string, interval time.Duration) *pinger {
	waitPingIP(ic.t, ns, what, ip)
	iv := strconv.FormatFloat(interval.Seconds(), 'f', 3, 64)
	return &pinger{what: what, p: ic.tp.Start(ns, "ping", "-n", "-i", iv, "-W", "1", ip)}
}

var icmpSeq = regexp.MustCompile(`icmp_seq=(\d+) `)

// stop ends the ping and returns (echoes sent up to the last reply, lost).
func (pg *pinger) stop() (sent, lost int) {
	_ = pg.p.Stop(syscall.SIGINT)
	got := map[int]bool{}
	last := 0
	for _, m := range icmpSeq.FindAllStringSubmatch(pg.p.Stdout(), -1) {
		n, _ := strconv.Atoi(m[1])
		got[n] = true
		last = max(last, n)
	}
	for s := 1; s <= last; s++ {
		if !got[s] {
			lost++
		}
	}
	return last, lost
}

// percentile is the nearest-rank percentile of sorted samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}
