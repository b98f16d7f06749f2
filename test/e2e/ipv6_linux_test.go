package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

var ipv6Only3 = []string{netnstest.UnderlayIPv6, netnstest.UnderlayIPv6, netnstest.UnderlayIPv6}

// TestIPv6UnderlayThreeHosts: three hosts with an IPv6-only underlay, h1
// and h3 launched with `[fd00:100::2]` as peer. h1 and h3 find each other
// by discovery (h2's inbound connection addresses, joined with our port
// as [v6]:6783), containers with IPv4 overlay addresses ping across over
// sleeve, and the fast path, asked for, falls back to sleeve saying why.
func TestIPv6UnderlayThreeHosts(t *testing.T) {
	t.Parallel()
	cl := newFastCluster(t, clusterOpts{hosts: 3, hub: 2, underlay: ipv6Only3})
	cl.waitEstablished(1, 2)
	cl.waitEstablished(3, 2)
	cl.waitEstablished(1, 3)
	cl.waitPing(1, 3)
	cl.waitPing(3, 1)
	cl.waitPing(2, 1)
	// 1500 - 40 (IPv6) - 8 (UDP) - 34: 20 bytes below IPv4's 1438.
	cl.waitLogLine(1, "Effective MTU verified at 1418", peerName(3))
	st := cl.waitLink(1, 3, "sleeve", func(s linkState) bool { return s.overlay == "sleeve" })
	if !strings.Contains(st.fallback, "vxlan needs an IPv4 underlay") {
		t.Fatalf("h1->h3 fallback = %q, want the fast path's reason (vxlan needs an IPv4 underlay)", st.fallback)
	}
	// Liveness runs over IPv6 too.
	cl.waitAlive(1, 2)
	cl.waitAlive(1, 3)
	// The CLI takes [v6]:port and refuses a malformed IPv6 peer by name.
	cl.weave(1, "connect", "[fd00:100::3]:6783")
	if out, err := cl.tp.Weave(cl.host(1), "connect", "[fd00:100::zz]"); err == nil || !strings.Contains(err.Error()+out, `"fd00:100::zz" is not an IPv6 address`) {
		t.Fatalf("weave connect [fd00:100::zz]: err %v, want a refusal naming it:\n%s", err, out)
	}
}

// TestIPv6UnderlayEncrypted: two IPv6-only hosts with a password, the
// second bound with --host to its IPv6 address (sleeve then has only the
// IPv6 socket pair) and given its peer as [v6]:port: encrypted sleeve,
// MTU 20 bytes below IPv4's 1414, containers ping, liveness alive.
func TestIPv6UnderlayEncrypted(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 2, password: "s3cret", noLaunch: []int{2},
		underlay: []string{netnstest.UnderlayIPv6, netnstest.UnderlayIPv6}})
	args := cl.launchArgs(2)                      // ends with the hub as [fd00:100::1]
	args = append(args[:len(args)-1:len(args)-1], // flags come before peers
		"--host", cl.host(2).IP6, "[fd00:100::1]:6783")
	if _, err := cl.tp.StartRouter(cl.host(2), args...); err != nil {
		t.Fatal(err)
	}
	cl.attach(2)
	cl.waitEstablished(2, 1)
	cl.waitEstablished(1, 2)
	checkEncryptionStatus(t, cl, true)
	cl.waitLogLine(2, "Effective MTU verified at 1394", peerName(1))
	cl.waitPing(1, 2)
	cl.waitPing(2, 1)
	cl.waitAlive(2, 1)
	cl.waitAlive(1, 2)
}

// TestMixedUnderlay: h1 has IPv4 only (IPv6 disabled), h2 both, h3 IPv6
// only. h1 joins h2 over IPv4, h3 over IPv6, naming h2 by a host name
// whose only address is IPv6 (an AAAA-only name); c1 and c3 reach each other
// through h2, which relays between its IPv4 and its IPv6 link. h1 never
// gets a link to h3 (no common family) and keeps working although the
// gossip tells it h3's IPv6 address.
func TestMixedUnderlay(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, clusterOpts{hosts: 3, hub: 2, noLaunch: []int{3},
		underlay: []string{netnstest.UnderlayIPv4, netnstest.UnderlayDual, netnstest.UnderlayIPv6}})
	cl.tp.SetHosts(cl.host(3), "127.0.0.1 localhost\n::1 localhost\n"+cl.host(2).IP6+" hub.v6.test\n")
	args := cl.launchArgs(3)
	args[len(args)-1] = "hub.v6.test"
	if _, err := cl.tp.StartRouter(cl.host(3), args...); err != nil {
		t.Fatal(err)
	}
	cl.attach(3)
	netnstest.WaitFor(t, establishTimeout, "h2 established over IPv4 to h1 and over IPv6 to h3", func() error {
		conns, out, err := cl.connections(2)
		if err != nil {
			return err
		}
		var v4, v6 bool
		for _, c := range conns {
			v4 = v4 || (c.State == "established" && strings.HasPrefix(c.Addr, cl.host(1).IP+":"))
			v6 = v6 || (c.State == "established" && strings.HasPrefix(c.Addr, "["+cl.host(3).IP6+"]:"))
		}
		if !v4 || !v6 {
			return fmt.Errorf("IPv4 link to h1 %v, IPv6 link to h3 %v:\n%s", v4, v6, out)
		}
		return nil
	})
	cl.waitPing(1, 3)
	cl.waitPing(3, 1)
	cl.waitPing(1, 2)
	if ok, out, _ := cl.establishedTo(1, 3); ok {
		t.Fatalf("h1 (IPv4 only) has an established link to h3 (IPv6 only):\n%s", out)
	}
}

// waitLogLine waits until host i's weaver.log has a line with every one
// of parts (sleeve logs its verified path MTU there; status shows the
// framing's larger overlay MTU once jumbo or segmented framing is on).
func (cl *cluster) waitLogLine(i int, parts ...string) {
	cl.t.Helper()
	path := filepath.Join(cl.host(i).RunDir, "weaver.log")
	netnstest.WaitFor(cl.t, establishTimeout, fmt.Sprintf("h%d logs %q", i, parts), func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
	lines:
		for _, l := range strings.Split(string(b), "\n") {
			for _, p := range parts {
				if !strings.Contains(l, p) {
					continue lines
				}
			}
			return nil
		}
		return fmt.Errorf("no such line in %s", path)
	})
}

// waitAlive waits until host i's liveness view (weave report) has host j
// alive.
func (cl *cluster) waitAlive(i, j int) {
	cl.t.Helper()
	netnstest.WaitFor(cl.t, establishTimeout, fmt.Sprintf("h%d's liveness sees h%d alive", i, j), func() error {
		out := cl.weave(i, "report")
		var r livenessReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			return fmt.Errorf("decode weave report: %w", err)
		}
		if e := r.Router.Liveness[peerName(j)]; e.State != "alive" {
			return fmt.Errorf("h%d is %q in h%d's liveness view %v", j, e.State, i, r.Router.Liveness)
		}
		return nil
	})
}
