package daemon

import (
	"log/slog"
	"net/netip"
	"testing"

	"github.com/seedf75a49c6/weave/fastdp"
)

func TestBridgeMTU(t *testing.T) {
	underlay := fastdp.DetectUnderlay("").OverlayMTU()
	for _, c := range []struct {
		name     string
		mtu      int
		noFastDP bool
		password string
		trusted  []netip.Prefix
		want     int
	}{
		{"--mtu wins", 1400, false, "", nil, 1400},
		{"--mtu wins without fastdp", 9000, true, "", nil, 9000},
		{"--mtu wins with a password", 1400, false, "pw", nil, 1400},
		{"sleeve only keeps jumbo bridge", 0, true, "", nil, SleeveBridgeMTU},
		{"fast path: underlay minus VXLAN overhead", 0, false, "", nil, underlay},
		{"password, no trusted subnets: all links sleeve", 0, false, "pw", nil, SleeveBridgeMTU},
		{"password with trusted subnets: some links may use vxlan", 0, false, "pw",
			[]netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}, underlay},
	} {
		d := &daemon{cfg: Config{MTU: c.mtu, NoFastDP: c.noFastDP, Password: c.password, TrustedSubnets: c.trusted},
			log: slog.New(slog.DiscardHandler)}
		if got := d.bridgeMTU(); got != c.want {
			t.Errorf("%s: bridgeMTU = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestFastPathDisabledByFlag(t *testing.T) {
	d := &daemon{cfg: Config{NoFastDP: true}, log: slog.New(slog.DiscardHandler)}
	if o := d.fastPath(0, &meshRef{}); o != nil {
		t.Fatalf("--no-fastdp built overlays %v", o)
	}
	if id := (&meshRef{}).shortID(); id != 0 {
		t.Fatalf("short ID before the mesh exists = %d", id)
	}
}

// The VXLAN devices keep the underlay-derived MTU even when the bridge is
// sized for sleeve (password, no trusted subnets): a 65535 VXLAN MTU is
// invalid and would disable the fast path and its status reasons.
func TestVXLANMTUIndependentOfBridge(t *testing.T) {
	underlay := fastdp.DetectUnderlay("").OverlayMTU()
	d := &daemon{cfg: Config{Password: "pw"}, log: slog.New(slog.DiscardHandler)}
	if got := d.bridgeMTU(); got != SleeveBridgeMTU {
		t.Fatalf("bridgeMTU = %d, want %d", got, SleeveBridgeMTU)
	}
	if got := d.vxlanMTU(); got != underlay {
		t.Fatalf("vxlanMTU = %d, want %d", got, underlay)
	}
	d.cfg.MTU = 1400
	if got := d.vxlanMTU(); got != 1400 {
		t.Fatalf("vxlanMTU with --mtu = %d, want 1400", got)
	}
}
