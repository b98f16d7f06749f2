package daemon

import (
	"log/slog"
	"testing"

	"github.com/seedf75a49c6/weave/fastdp"
	"github.com/seedf75a49c6/weave/internal/weaver"
)

func TestBridgeMTU(t *testing.T) {
	underlay, _ := fastdp.UnderlayMTU("")
	for _, c := range []struct {
		name     string
		mtu      int
		noFastDP bool
		want     int
	}{
		{"--mtu wins", 1400, false, 1400},
		{"--mtu wins without fastdp", 9000, true, 9000},
		{"sleeve only keeps jumbo bridge", 0, true, weaver.SleeveBridgeMTU},
		{"fast path: underlay minus VXLAN overhead", 0, false, underlay - fastdp.Overhead},
	} {
		d := &daemon{cfg: weaver.Config{MTU: c.mtu, NoFastDP: c.noFastDP}, log: slog.New(slog.DiscardHandler)}
		if got := d.bridgeMTU(); got != c.want {
			t.Errorf("%s: bridgeMTU = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestFastPathDisabledByFlag(t *testing.T) {
	d := &daemon{cfg: weaver.Config{NoFastDP: true}, log: slog.New(slog.DiscardHandler)}
	if o := d.fastPath(0, &meshRef{}, 1450); o != nil {
		t.Fatalf("--no-fastdp built overlays %v", o)
	}
	if id := (&meshRef{}).shortID(); id != 0 {
		t.Fatalf("short ID before the mesh exists = %d", id)
	}
}
