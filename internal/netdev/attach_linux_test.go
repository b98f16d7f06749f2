//go:build linux

package netdev

import (
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/internal/nlsafe"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

func newContainerNS(t *testing.T) (name, path string) {
	t.Helper()
	return netnstest.NewNS(t)
}

func TestAttachContainer(t *testing.T) {
	host, bridge := hostWithBridge(t, 1400)
	c1name, c1 := newContainerNS(t)
	_, c2 := newContainerNS(t)
	mac1 := net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	a1, a2 := netip.MustParsePrefix("10.32.0.1/12"), netip.MustParsePrefix("10.32.0.2/12")

	var got net.HardwareAddr
	in(t, host, func() error {
		var err error
		got, err = AttachContainer(AttachConfig{Bridge: bridge, NetNS: c1, ContainerID: "c0ffee11aa", Addrs: []netip.Prefix{a1}, MAC: mac1})
		if err != nil {
			return err
		}
		_, err = AttachContainer(AttachConfig{Bridge: bridge, NetNS: c2, Addrs: []netip.Prefix{a2}}) // id from the path hash
		return err
	})
	if got.String() != mac1.String() {
		t.Errorf("AttachContainer returned MAC %s, want %s", got, mac1)
	}
	hostEnd := link(t, host, "vethweplc0ffee1")
	if hostEnd.Attrs().MasterIndex != link(t, host, bridge).Attrs().Index {
		t.Errorf("host end not enslaved to %s", bridge)
	}
	if !slices.Contains(linkNames(t, host), ContainerVethPrefix+ShortID("", c2)) {
		t.Errorf("no %s%s for the id-less container", ContainerVethPrefix, ShortID("", c2))
	}
	if err := netns.Do(host, func() error {
		on, err := txChecksumEnabled("vethweplc0ffee1")
		if !on {
			t.Errorf("tx checksum offload off on the host end: GRO'd VXLAN segments would be re-segmented in software")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	checkContainer(t, c1, mac1, []netip.Prefix{a1})

	// A ping from c1 to c2 crosses the bridge.
	if _, err := exec.LookPath("ping"); err != nil {
		t.Log("ping not installed: skipping the ping check")
	} else if out, err := exec.Command("ip", "netns", "exec", c1name, "ping", "-c1", "-W2", a2.Addr().String()).CombinedOutput(); err != nil {
		t.Errorf("ping %s from c1: %v\n%s", a2.Addr(), err, out)
	}

	// Attaching again adds only the new address and keeps the interface.
	a1b := netip.MustParsePrefix("10.33.0.1/16")
	idx := link(t, c1, DefaultContainerIf).Attrs().Index
	in(t, host, func() error {
		_, err := AttachContainer(AttachConfig{Bridge: bridge, NetNS: c1, ContainerID: "c0ffee11aa", Addrs: []netip.Prefix{a1, a1b}})
		return err
	})
	if link(t, c1, DefaultContainerIf).Attrs().Index != idx {
		t.Errorf("re-attach recreated %s", DefaultContainerIf)
	}
	checkContainer(t, c1, mac1, []netip.Prefix{a1, a1b})

	// Detach one address, then the rest: the interface goes with the last.
	if err := DetachContainer(c1, "", []netip.Prefix{a1}); err != nil {
		t.Fatal(err)
	}
	checkContainer(t, c1, mac1, []netip.Prefix{a1b})
	if err := DetachContainer(c1, "", []netip.Prefix{a1b}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := ContainerAddrs(c1, ""); err != nil || ok {
		t.Errorf("ContainerAddrs after full detach: ok=%v err=%v, want interface gone", ok, err)
	}
	if slices.Contains(linkNames(t, host), "vethweplc0ffee1") {
		t.Errorf("host end survived detach")
	}
	if err := DetachContainer(c1, "", nil); err != nil {
		t.Errorf("detach of a missing interface: %v", err)
	}
}

// checkContainer asserts MAC, addresses, MTU, multicast route and ARP sysctls of ethwe.
func checkContainer(t *testing.T, nsPath string, mac net.HardwareAddr, want []netip.Prefix) {
	t.Helper()
	gotMAC, addrs, ok, err := ContainerAddrs(nsPath, "")
	if err != nil || !ok {
		t.Fatalf("ContainerAddrs: ok=%v err=%v", ok, err)
	}
	if gotMAC.String() != mac.String() {
		t.Errorf("container MAC %s, want %s", gotMAC, mac)
	}
	slices.SortFunc(addrs, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	if !slices.Equal(addrs, want) {
		t.Errorf("container addresses %v, want %v", addrs, want)
	}
	l := link(t, nsPath, DefaultContainerIf)
	if l.Attrs().MTU != 1400 {
		t.Errorf("container MTU %d, want the bridge's 1400", l.Attrs().MTU)
	}
	in(t, nsPath, func() error {
		routes, err := nlsafe.RouteList(nil, l, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(routes, func(r netlink.Route) bool { return r.Dst != nil && r.Dst.String() == "224.0.0.0/4" }) {
			t.Errorf("no 224.0.0.0/4 route on %s: %v", DefaultContainerIf, routes)
		}
		for key, want := range map[string]string{"base_reachable_time": "5", "delay_first_probe_time": "2", "ucast_solicit": "1"} {
			v, err := readSysctl(filepath.Join("net/ipv4/neigh", DefaultContainerIf, key))
			if err != nil {
				return err
			}
			if v != want {
				t.Errorf("sysctl %s = %s, want %s", key, v, want)
			}
		}
		on, err := txChecksumEnabled(DefaultContainerIf)
		if !on {
			t.Errorf("tx checksum offload off inside the container: its TCP cannot use TSO/GSO")
		}
		return err
	})
}

func TestShortID(t *testing.T) {
	cases := []struct{ id, path, want string }{
		{"0123456789abcdef", "", "0123456"},
		{"a/b.c:d-e_f", "", "abcd-e_"},
		{"abc", "", "abc"},
	}
	for _, c := range cases {
		if got := ShortID(c.id, c.path); got != c.want {
			t.Errorf("ShortID(%q) = %q, want %q", c.id, got, c.want)
		}
	}
	p1, p2 := ShortID("", "/var/run/netns/a"), ShortID("", "/var/run/netns/b")
	if len(p1) != 7 || p1 == p2 {
		t.Errorf("path-derived ids %q and %q: want 7 chars and distinct", p1, p2)
	}
}

// TestAttachContainerNoMove: the container end of the veth is created in
// the container namespace under its final name, never moved out of the
// host namespace (a move holds the RTNL across an RCU grace period and
// made concurrent CNI ADDs queue behind each other): the host namespace
// sees no RTM_DELLINK and no link of the temporary peer name while
// attaching, and the container gets its interface with the MAC and MTU.
func TestAttachContainerNoMove(t *testing.T) {
	host, bridge := hostWithBridge(t, 1400)
	_, c := newContainerNS(t)
	mac := net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x66}
	a := netip.MustParsePrefix("10.32.0.7/12")
	h, err := vnetns.GetFromPath(host)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	updates, done := make(chan netlink.LinkUpdate, 256), make(chan struct{})
	defer close(done)
	if err := netlink.LinkSubscribeAt(h, updates, done); err != nil {
		t.Fatal(err)
	}
	const id = "feed0042bb"
	hostEnd := ContainerVethPrefix + ShortID(id, c)
	in(t, host, func() error {
		if _, err := AttachContainer(AttachConfig{Bridge: bridge, NetNS: c, ContainerID: id, Addrs: []netip.Prefix{a}, MAC: mac}); err != nil {
			return err
		}
		return netlink.LinkSetAlias(link(t, host, hostEnd), "sentinel") // the last event to wait for
	})
	deadline := time.After(10 * time.Second)
	for seen := false; !seen; {
		select {
		case u := <-updates:
			name := u.Link.Attrs().Name
			if u.Header.Type == unix.RTM_DELLINK {
				t.Errorf("host namespace saw RTM_DELLINK of %s: a link was moved out (or deleted) while attaching", name)
			}
			if strings.HasPrefix(name, ContainerPeerPrefix) {
				t.Errorf("host namespace saw the temporary peer %s", name)
			}
			seen = name == hostEnd && u.Link.Attrs().Alias == "sentinel"
		case <-deadline:
			t.Fatal("no link event with the sentinel alias within 10s")
		}
	}
	if got := link(t, c, DefaultContainerIf).Attrs().MTU; got != 1400 {
		t.Errorf("container interface MTU %d, want the bridge's 1400", got)
	}
	checkContainer(t, c, mac, []netip.Prefix{a})
}
