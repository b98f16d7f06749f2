package router

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// shownAs is a fakeOverlay that negotiates under one name and is shown
// under another, as fastdp ("vxlan" in Overlays, "fastdp" to people).
type shownAs struct {
	*fakeOverlay
	display string
}

func (s shownAs) DisplayName() string { return s.display }

// TestDisplayNameOnlyForPeople: the Overlays feature and the choice of a
// common overlay use Name; the fallback attribute and the diagnostics keys
// use DisplayName, and a peer advertising only the display name shares
// nothing with us.
func TestDisplayNameOnlyForPeople(t *testing.T) {
	fast := shownAs{&fakeOverlay{name: "vxlan", prepErr: errors.New("encryption required")}, "fastdp"}
	sleeve := &fakeOverlay{name: "sleeve"}
	sw := NewOverlaySwitch(nil, fast, sleeve)
	features := map[string]string{}
	sw.AddFeaturesTo(features)
	if features[OverlaysFeature] != "vxlan sleeve" {
		t.Fatalf("Overlays feature %q, want our negotiation names", features[OverlaysFeature])
	}
	diags := sw.Diagnostics().(map[string]any)
	if _, ok := diags["fastdp"]; !ok || len(diags) != 2 {
		t.Fatalf("diagnostics keys %v, want fastdp and sleeve", diags)
	}
	sent, mu := &[]sentMsg{}, &sync.Mutex{}
	f := sleeveAfterRefusedFastPath(t, sw, sleeve, sent, mu)
	if got := fallbackOf(f); got != "fastdp(encryption required)" {
		t.Fatalf("fallback = %v, want the display name", got)
	}
	// A Weave 2.8.1 peer advertises "fastdp sleeve": only sleeve is common.
	conn2, err := sw.PrepareConnection(connParams(map[string]string{"Overlays": "fastdp sleeve"}, sent, mu))
	if err != nil {
		t.Fatal(err)
	}
	f2 := conn2.(*SwitchForwarder)
	defer f2.Stop()
	if len(f2.names) != 1 || !strings.EqualFold(f2.names[0], "sleeve") {
		t.Fatalf("a 2.8.1 peer's fastdp matched ours: %v", f2.names)
	}
}
