//go:build linux

package netdev

import (
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestEnsureBridgeCreates(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	br := link(t, nsPath, bridge)
	if _, ok := br.(*netlink.Bridge); !ok {
		t.Fatalf("%s is a %s, want bridge", bridge, br.Type())
	}
	if got := br.Attrs().HardwareAddr.String(); got != testMAC.String() {
		t.Errorf("bridge MAC %s, want %s", got, testMAC)
	}
	port, pcap := link(t, nsPath, DefaultBridgeIface), link(t, nsPath, DefaultPcapIface)
	for _, l := range []netlink.Link{br, port, pcap} {
		a := l.Attrs()
		if a.MTU != DefaultMTU {
			t.Errorf("%s MTU %d, want %d", a.Name, a.MTU, DefaultMTU)
		}
		if a.Flags&1 == 0 { // net.FlagUp
			t.Errorf("%s is down", a.Name)
		}
		in(t, nsPath, func() error {
			on, err := txChecksumEnabled(a.Name)
			if err == nil && on {
				t.Errorf("%s has tx checksum offload on", a.Name)
			}
			return err
		})
	}
	if port.Attrs().MasterIndex != br.Attrs().Index {
		t.Errorf("%s not enslaved to %s", DefaultBridgeIface, bridge)
	}
	if pcap.Attrs().MasterIndex != 0 {
		t.Errorf("%s is enslaved (master %d), want free", DefaultPcapIface, pcap.Attrs().MasterIndex)
	}
}

func TestEnsureBridgeCustomMTUAndIdempotent(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 1410)
	before := map[string]int{}
	for _, n := range []string{bridge, DefaultBridgeIface, DefaultPcapIface} {
		l := link(t, nsPath, n)
		before[n] = l.Attrs().Index
		if l.Attrs().MTU != 1410 {
			t.Errorf("%s MTU %d, want 1410", n, l.Attrs().MTU)
		}
	}
	in(t, nsPath, func() error { return EnsureBridge(BridgeConfig{Name: bridge, MAC: testMAC, MTU: 1410}) })
	for n, idx := range before {
		if got := link(t, nsPath, n).Attrs().Index; got != idx {
			t.Errorf("second EnsureBridge recreated %s (index %d -> %d)", n, idx, got)
		}
	}
}

func TestEnsureBridgeRepairs(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	in(t, nsPath, func() error {
		if err := deleteLink(DefaultPcapIface); err != nil { // removes the whole pair
			return err
		}
		br, err := netlink.LinkByName(bridge)
		if err != nil {
			return err
		}
		return netlink.LinkSetDown(br)
	})
	in(t, nsPath, func() error { return EnsureBridge(BridgeConfig{Name: bridge, MAC: testMAC}) })
	br := link(t, nsPath, bridge)
	port := link(t, nsPath, DefaultBridgeIface)
	_ = link(t, nsPath, DefaultPcapIface)
	if port.Attrs().MasterIndex != br.Attrs().Index {
		t.Errorf("repaired %s not enslaved", DefaultBridgeIface)
	}
	if br.Attrs().Flags&1 == 0 {
		t.Errorf("bridge still down after repair")
	}
	if br.Attrs().MTU != DefaultMTU {
		t.Errorf("bridge MTU %d after repair, want %d", br.Attrs().MTU, DefaultMTU)
	}
}

func TestDestroyBridgeRemovesEverything(t *testing.T) {
	nsPath, bridge := hostWithBridge(t, 0)
	_, c1 := newContainerNS(t)
	in(t, nsPath, func() error {
		_, err := AttachContainer(AttachConfig{Bridge: bridge, NetNS: c1, ContainerID: "abcdef0123"})
		return err
	})
	if !slices.Contains(linkNames(t, nsPath), "vethweplabcdef0") {
		t.Fatalf("attach did not create vethweplabcdef0: %v", linkNames(t, nsPath))
	}
	in(t, nsPath, func() error { return DestroyBridge(bridge) })
	for _, n := range linkNames(t, nsPath) {
		if n != "lo" {
			t.Errorf("link %s left after DestroyBridge", n)
		}
	}
	in(t, nsPath, func() error { return DestroyBridge(bridge) }) // missing objects are fine
	for _, n := range linkNames(t, c1) {
		if strings.HasPrefix(n, DefaultContainerIf) {
			t.Errorf("container interface %s survived DestroyBridge", n)
		}
	}
}
