package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// newFastCluster is newCluster with the VXLAN fast path enabled.
func newFastCluster(t *testing.T, opts clusterOpts) *cluster {
	t.Helper()
	opts.fastdp = true
	return newCluster(t, opts)
}

// linkState is the overlay of host i's established connection to peer j
// and the fallback reason, if any, from `weave status connections`.
type linkState struct {
	overlay, fallback, mtu string
}

var (
	fallbackRE = regexp.MustCompile(`fallback=(\w+\(.*\))`)
	mtuRE      = regexp.MustCompile(`mtu=(\d+)`)
)

func (cl *cluster) link(i, j int) (linkState, string, error) {
	conns, out, err := cl.connections(i)
	if err != nil {
		return linkState{}, out, err
	}
	for _, c := range conns {
		if c.State != "established" || !strings.Contains(c.Info, peerName(j)) {
			continue
		}
		f := strings.Fields(c.Info)
		if f[0] == "encrypted" || f[0] == "unencrypted" {
			f = f[1:]
		}
		st := linkState{overlay: f[0]}
		if m := fallbackRE.FindStringSubmatch(c.Info); m != nil {
			st.fallback = m[1]
		}
		if m := mtuRE.FindStringSubmatch(c.Info); m != nil {
			st.mtu = m[1]
		}
		return st, out, nil
	}
	return linkState{}, out, fmt.Errorf("no established connection from h%d to h%d", i, j)
}

// waitLink waits until host i's link to j matches cond and returns it.
func (cl *cluster) waitLink(i, j int, what string, cond func(linkState) bool) linkState {
	cl.t.Helper()
	var st linkState
	netnstest.WaitFor(cl.t, establishTimeout, fmt.Sprintf("h%d->h%d %s", i, j, what), func() error {
		var out string
		var err error
		st, out, err = cl.link(i, j)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, out)
		}
		if !cond(st) {
			return fmt.Errorf("link %+v; `weave status connections` on h%d:\n%s", st, i, out)
		}
		return nil
	})
	return st
}

func onVXLAN(st linkState) bool { return st.overlay == "fastdp" && st.fallback == "" }

// blockVXLAN drops (or, with on=false, stops dropping) UDP 6784 arriving
// at host i.
func (cl *cluster) blockVXLAN(i int, on bool) {
	cl.t.Helper()
	op := "-I"
	if !on {
		op = "-D"
	}
	if err := netnstest.Exec(cl.host(i).NS, "iptables", "-w", op, "INPUT", "-p", "udp", "--dport", "6784", "-j", "DROP"); err != nil {
		cl.t.Fatal(err)
	}
	if on {
		cl.t.Cleanup(func() {
			_ = netnstest.Exec(cl.host(i).NS, "iptables", "-w", "-D", "INPUT", "-p", "udp", "--dport", "6784", "-j", "DROP")
		})
	}
}

// learnedOnVXLAN reports whether host i's bridge learned mac on a vxw
// port: frames from it came through the kernel VXLAN path.
func (cl *cluster) learnedOnVXLAN(i int, mac string) (bool, string) {
	cl.t.Helper()
	out, err := netnstest.Output(cl.host(i).NS, "bridge", "fdb", "show", "br", "weave")
	if err != nil {
		cl.t.Fatal(err)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, strings.ToLower(mac)+" dev vxw-") {
			return true, out
		}
	}
	return false, out
}

// containerMAC returns the MAC of container i's ethwe.
func (cl *cluster) containerMAC(i int) string {
	cl.t.Helper()
	out, err := netnstest.Output(cl.container(i).NS, "cat", "/sys/class/net/ethwe/address")
	if err != nil {
		cl.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// vxlanDevices lists host i's vxw-* VXLAN devices.
func (cl *cluster) vxlanDevices(i int) string {
	cl.t.Helper()
	out, err := netnstest.Output(cl.host(i).NS, "ip", "-o", "link", "show", "type", "vxlan")
	if err != nil {
		cl.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}
