//go:build linux

package cluster

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// Use is what a group of processes costs at one moment.
type Use struct {
	Procs int
	RSS   int64         // bytes, summed (shared pages counted in each)
	CPU   time.Duration // user+system time so far
}

// Usage is the cost of every node (its network namespace's processes:
// containerd, kubelet, kube-proxy, shims, host-network pods; and its
// cgroups': the other pods) and of the "control-plane" (the underlay's).
func (c *Cluster) Usage() map[string]Use {
	out := map[string]Use{}
	for _, n := range c.Nodes {
		pids, _ := netnstest.Pids(n.NS)
		out[n.Name] = sumUse(append(pids, n.cgroupPids()...))
	}
	pids, _ := netnstest.Pids(c.Underlay)
	out["control-plane"] = sumUse(pids)
	return out
}

func sumUse(pids []int) Use {
	var u Use
	seen := map[int]bool{}
	for _, pid := range pids {
		if seen[pid] {
			continue
		}
		seen[pid] = true
		p := "/proc/" + strconv.Itoa(pid)
		st, err := os.ReadFile(p + "/stat")
		if err != nil {
			continue
		}
		// Fields after the ")" of comm: state is field 3; utime, stime 14, 15.
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		stt, _ := strconv.ParseInt(f[12], 10, 64)
		u.CPU += time.Duration(ut+stt) * (time.Second / 100) // USER_HZ
		status, _ := os.ReadFile(p + "/status")
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
				u.RSS += kb * 1024
			}
		}
		u.Procs++
	}
	return u
}
