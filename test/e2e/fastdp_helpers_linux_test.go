package e2e

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
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

// vxlanDetails is `ip -d -o link show type vxlan` on host i (devices with
// their local addresses).
func (cl *cluster) vxlanDetails(i int) string {
	cl.t.Helper()
	out, err := netnstest.Output(cl.host(i).NS, "ip", "-d", "-o", "link", "show", "type", "vxlan")
	if err != nil {
		cl.t.Fatal(err)
	}
	return out
}

// tcpTransfer sends n random bytes over TCP from container i to container
// j (a listener in cJ's namespace, a dial from cI's) and checks that they
// all arrive unchanged.
func (cl *cluster) tcpTransfer(i, j, n int) {
	cl.t.Helper()
	var ln net.Listener
	err := netns.Do(netnstest.NSPath(cl.container(j).NS), func() (err error) {
		ln, err = net.Listen("tcp4", net.JoinHostPort(cl.container(j).IP(), "0"))
		return err
	})
	if err != nil {
		cl.t.Fatalf("listen in c%d: %v", j, err)
	}
	defer ln.Close()
	type result struct {
		n   int64
		sum [32]byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(pingTimeout))
		h := sha256.New()
		m, err := io.Copy(h, c)
		var r result
		r.n, r.err = m, err
		copy(r.sum[:], h.Sum(nil))
		got <- r
	}()
	data := make([]byte, n)
	_, _ = rand.Read(data)
	var c net.Conn
	err = netns.Do(netnstest.NSPath(cl.container(i).NS), func() (err error) {
		c, err = net.DialTimeout("tcp4", ln.Addr().String(), pingTimeout)
		return err
	})
	if err != nil {
		cl.t.Fatalf("dial c%d -> c%d: %v", i, j, err)
	}
	_ = c.SetDeadline(time.Now().Add(pingTimeout))
	_, err = c.Write(data)
	_ = c.Close()
	if err != nil {
		cl.t.Fatalf("TCP c%d -> c%d: write: %v", i, j, err)
	}
	r := <-got
	if r.err != nil || r.n != int64(n) || r.sum != sha256.Sum256(data) {
		cl.t.Fatalf("TCP c%d -> c%d: received %d of %d bytes (err %v), intact %v", i, j, r.n, n, r.err, r.sum == sha256.Sum256(data))
	}
}
