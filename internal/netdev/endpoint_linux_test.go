//go:build linux

package netdev

import (
	"net"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestDockerEndpointLifecycle: the pair is named as 2.8.1 names it, the
// host end is a bridge port with the bridge MTU, the given MAC is kept,
// a repeated create replaces the pair, NamespaceIfaces sees the container
// end once moved, and delete removes both ends.
func TestDockerEndpointLifecycle(t *testing.T) {
	host, bridge := hostWithBridge(t, 1410)
	_, sandbox := netnstest.NewNS(t)
	id := "0123456789abcdef"
	mac := net.HardwareAddr{0x02, 0x42, 0x0a, 0x20, 0x00, 0x07}
	var got net.HardwareAddr
	in(t, host, func() error {
		if _, err := CreateEndpoint(bridge, id, nil); err != nil {
			return err
		}
		var err error
		got, err = CreateEndpoint(bridge, id, mac) // replaces the first pair
		return err
	})
	if got.String() != mac.String() {
		t.Fatalf("CreateEndpoint MAC %s, want %s", got, mac)
	}
	h := link(t, host, "vethwl012345678")
	g := link(t, host, "vethwg012345678")
	if h.Attrs().MasterIndex != link(t, host, bridge).Attrs().Index || h.Attrs().MTU != 1410 || g.Attrs().MTU != 1410 {
		t.Fatalf("host end master %d MTU %d, guest MTU %d; want bridge port, 1410", h.Attrs().MasterIndex, h.Attrs().MTU, g.Attrs().MTU)
	}
	in(t, host, func() error { return moveTo(g.Attrs().Name, sandbox, "ethwe0") })
	ifs, err := NamespaceIfaces(sandbox, "ethwe")
	if err != nil || len(ifs) != 1 || ifs[0].Name != "ethwe0" || ifs[0].MAC.String() != mac.String() {
		t.Fatalf("NamespaceIfaces = %+v, %v; want ethwe0 with %s", ifs, err, mac)
	}
	if all, _ := NamespaceIfaces(sandbox, ""); len(all) != 1 {
		t.Fatalf("NamespaceIfaces(all) = %+v; want only ethwe0 (loopback skipped)", all)
	}
	var existed bool
	in(t, host, func() error { existed, err = DeleteEndpoint(id); return err })
	if !existed || slices.Contains(linkNames(t, host), "vethwl012345678") {
		t.Fatalf("DeleteEndpoint existed=%v, links after: %v", existed, linkNames(t, host))
	}
	if ifs, _ := NamespaceIfaces(sandbox, "ethwe"); len(ifs) != 0 {
		t.Fatalf("container end survived the delete: %+v", ifs)
	}
	in(t, host, func() error { existed, err = DeleteEndpoint(id); return err })
	if existed {
		t.Fatal("second DeleteEndpoint reports the endpoint existed")
	}
}

// moveTo moves link name into the namespace at path and renames it.
func moveTo(name, path, newName string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	fd, err := vnetns.GetFromPath(path)
	if err != nil {
		return err
	}
	defer fd.Close()
	if err := netlink.LinkSetNsFd(l, int(fd)); err != nil {
		return err
	}
	return netns.Do(path, func() error {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		return netlink.LinkSetName(l, newName)
	})
}
