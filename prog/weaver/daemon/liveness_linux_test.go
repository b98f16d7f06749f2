package daemon

import (
	"os/exec"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestAdvertiseAddrWithoutPeersIsTheUplink: a router launched with no peers
// on a host that also has a docker0-like bridge address advertises the
// address of its default route, which other hosts can reach.
func TestAdvertiseAddrWithoutPeersIsTheUplink(t *testing.T) {
	netnstest.RequireTools(t, "ip")
	name, path := netnstest.NewNS(t)
	for _, args := range [][]string{
		{"link", "add", "dock0", "type", "veth", "peer", "name", "dock1"},
		{"link", "add", "up0", "type", "veth", "peer", "name", "up1"},
		{"addr", "add", "172.17.0.1/16", "dev", "dock0"},
		{"addr", "add", "10.9.0.2/24", "dev", "up0"},
		{"link", "set", "dock0", "up"}, {"link", "set", "dock1", "up"},
		{"link", "set", "up0", "up"}, {"link", "set", "up1", "up"},
		{"route", "add", "default", "via", "10.9.0.1"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	var got string
	if err := netns.Do(path, func() error { got = advertiseAddr(Config{Port: 6783}); return nil }); err != nil {
		t.Fatal(err)
	}
	if got != "10.9.0.2" {
		t.Errorf("advertiseAddr with no peers = %q, want the uplink's 10.9.0.2", got)
	}
	if got := advertiseAddr(Config{Host: "192.168.7.7"}); got != "192.168.7.7" {
		t.Errorf("advertiseAddr with --host = %q, want it", got)
	}
}

// TestAdvertiseAddrWithoutDefaultRoute: with no peer and no default route,
// a public address still serves (memberlist on its own would refuse it:
// "no private IP address found"); with only loopback there is none, and
// the router then runs with liveness off instead of failing.
func TestAdvertiseAddrWithoutDefaultRoute(t *testing.T) {
	netnstest.RequireTools(t, "ip")
	name, path := netnstest.NewNS(t)
	adv := func() (got string) {
		t.Helper()
		if err := netns.Do(path, func() error { got = advertiseAddr(Config{Port: 6783}); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").Run(); err != nil {
		t.Fatal(err)
	}
	if got := adv(); got != "" {
		t.Errorf("advertiseAddr with only loopback = %q, want none", got)
	}
	for _, args := range [][]string{
		{"link", "add", "pub0", "type", "veth", "peer", "name", "pub1"},
		{"addr", "add", "fe80::7/64", "dev", "pub0"},
		{"addr", "add", "2001:db8::7/64", "dev", "pub0", "nodad"},
		{"link", "set", "pub0", "up"}, {"link", "set", "pub1", "up"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	if got := adv(); got != "2001:db8::7" {
		t.Errorf("advertiseAddr with only IPv6 addresses = %q, want the global one, 2001:db8::7 (liveness then listens on ::)", got)
	}
	if out, err := exec.Command("ip", "-n", name, "addr", "add", "8.8.4.4/24", "dev", "pub0").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := adv(); got != "8.8.4.4" {
		t.Errorf("advertiseAddr with a public IPv4 address and no default route = %q, want it", got)
	}
}

// TestAdvertiseAddr6OnDualStackHost: a host with IPv4 and a global IPv6
// address advertises the IPv6 one to the IPv6 liveness membership (the
// source address towards an IPv6 peer, else its global address); one with
// only a link-local IPv6 address, or an IPv6 peer it has no route to,
// has none, and is in the IPv4 membership only.
func TestAdvertiseAddr6OnDualStackHost(t *testing.T) {
	netnstest.RequireTools(t, "ip")
	name, path := netnstest.NewNS(t)
	adv6 := func(peers ...string) (got string) {
		t.Helper()
		if err := netns.Do(path, func() error { got = advertiseAddr6(Config{Port: 6783, Peers: peers}); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "up0", "type", "veth", "peer", "name", "up1"},
		{"addr", "add", "10.9.0.2/24", "dev", "up0"},
		{"addr", "add", "fe80::7/64", "dev", "up0", "nodad"},
		{"link", "set", "up0", "up"}, {"link", "set", "up1", "up"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	if got := adv6("10.9.0.1"); got != "" {
		t.Errorf("advertiseAddr6 with only a link-local IPv6 address = %q, want none", got)
	}
	for _, args := range [][]string{
		{"addr", "add", "fd00:9::2/64", "dev", "up0", "nodad"},
		{"addr", "add", "fd00:8::2/64", "dev", "up0", "nodad"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	if got := adv6("10.9.0.1", "[fd00:8::1]:6783"); got != "fd00:8::2" {
		t.Errorf("advertiseAddr6 towards an IPv6 peer = %q, want the source address fd00:8::2", got)
	}
	if got := adv6("10.9.0.1"); got != "fd00:9::2" && got != "fd00:8::2" {
		t.Errorf("advertiseAddr6 with no IPv6 peer = %q, want a global address of the host", got)
	}
}
