//go:build linux

package netdev

import (
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestAttachBridge: weave attach-bridge joins another bridge to the weave
// bridge with vethwebl<bridge>/vethwebg<bridge>, twice is fine, a non-bridge
// is refused, and DestroyBridge (weave reset) removes the pair.
func TestAttachBridge(t *testing.T) {
	nsPath, weave := hostWithBridge(t, 0)
	in(t, nsPath, func() error {
		return netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "dbr0"}})
	})
	for range 2 {
		in(t, nsPath, func() error { return AttachBridge(weave, "dbr0") })
	}
	local, guest := link(t, nsPath, "vethwebldbr0"), link(t, nsPath, "vethwebgdbr0")
	if local.Attrs().MasterIndex != link(t, nsPath, weave).Attrs().Index || guest.Attrs().MasterIndex != link(t, nsPath, "dbr0").Attrs().Index {
		t.Fatalf("vethwebldbr0 on %d, vethwebgdbr0 on %d; want them on %s and dbr0", local.Attrs().MasterIndex, guest.Attrs().MasterIndex, weave)
	}
	if local.Attrs().Flags&1 == 0 || guest.Attrs().Flags&1 == 0 {
		t.Fatal("attach-bridge veths are down")
	}
	in(t, nsPath, func() error {
		err := AttachBridge(weave, DefaultPcapIface)
		if err == nil || !strings.Contains(err.Error(), "not a bridge") {
			t.Errorf("attach-bridge to a veth: %v", err)
		}
		return DestroyBridge(weave)
	})
	if names := linkNames(t, nsPath); slices.Contains(names, "vethwebldbr0") || slices.Contains(names, "vethwebgdbr0") {
		t.Fatalf("reset left the attach-bridge veths: %v", names)
	}
}
