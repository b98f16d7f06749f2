package router

import (
	"errors"
	"sync"
	"testing"
)

// reasonFwd is a fakeFwd that explains why it is not usable.
type reasonFwd struct {
	*fakeFwd
	reason string
}

func (r reasonFwd) FallbackReason() string { return r.reason }

func fallbackOf(f *SwitchForwarder) any { return f.Attrs()[FallbackAttr] }

func TestSwitchAttrsNameFallbackReason(t *testing.T) {
	_, f, ff, sf, _, _ := prepared(t)
	sf.establish()
	eventually(t, "sleeve best", func() bool { return attrName(f) == "sleeve" })
	if got := fallbackOf(f); got != "fastdp(not established)" {
		t.Fatalf("fallback = %v, want fastdp: not established", got)
	}
	ff.establish()
	eventually(t, "fastdp best", func() bool { return attrName(f) == "fastdp" })
	if got, ok := f.Attrs()[FallbackAttr]; ok {
		t.Fatalf("fallback attr %v while the preferred overlay is in use", got)
	}
	ff.health <- false
	eventually(t, "sleeve while on hold", func() bool { return attrName(f) == "sleeve" })
	if got := fallbackOf(f); got != "fastdp(on hold)" {
		t.Fatalf("fallback = %v, want fastdp: on hold", got)
	}
	ff.errc <- errors.New("device gone")
	eventually(t, "failure reason", func() bool { return fallbackOf(f) == "fastdp(device gone)" })
}

// sleeveAfterRefusedFastPath prepares a connection on sw to a peer that
// advertises "vxlan sleeve", confirms it, establishes sleeve and waits
// until sleeve is the best forwarder; the caller's fast overlay refused
// the connection. The forwarder stops when the test ends.
func sleeveAfterRefusedFastPath(t *testing.T, sw *OverlaySwitch, sleeve *fakeOverlay, sent *[]sentMsg, mu *sync.Mutex) *SwitchForwarder {
	t.Helper()
	conn, err := sw.PrepareConnection(connParams(map[string]string{"Overlays": "vxlan sleeve"}, sent, mu))
	if err != nil {
		t.Fatal(err)
	}
	f := conn.(*SwitchForwarder)
	t.Cleanup(f.Stop)
	f.Confirm()
	sleeve.last().establish()
	eventually(t, "sleeve best", func() bool { return attrName(f) == "sleeve" })
	return f
}

func TestSwitchAttrsUseReasonerAndPrepareError(t *testing.T) {
	fast := &fakeOverlay{name: "vxlan", prepErr: errors.New("encryption required")}
	sleeve := &fakeOverlay{name: "sleeve"}
	sw := NewOverlaySwitch(nil, fast, sleeve)
	sent, mu := &[]sentMsg{}, &sync.Mutex{}
	f := sleeveAfterRefusedFastPath(t, sw, sleeve, sent, mu)
	if got := fallbackOf(f); got != "vxlan(encryption required)" {
		t.Fatalf("fallback = %v", got)
	}

	// A sub-forwarder implementing FallbackReasoner supplies the reason.
	sw2 := NewOverlaySwitch(nil)
	rf := reasonFwd{fakeFwd: newFakeFwd("vxlan", connParams(nil, sent, mu)), reason: "UDP 6784 blocked"}
	sf := newFakeFwd("sleeve", connParams(nil, sent, mu))
	f2 := newSwitchForwarder(sw2, remoteName, "x", []string{"vxlan", "sleeve"}, []Forwarder{rf, sf}, false)
	defer f2.Stop()
	f2.Confirm()
	sf.establish()
	eventually(t, "sleeve best", func() bool { return attrName(f2) == "sleeve" })
	if got := fallbackOf(f2); got != "vxlan(UDP 6784 blocked)" {
		t.Fatalf("fallback = %v", got)
	}
	if attrName(f2) != "sleeve" {
		t.Fatal("name attr lost")
	}
}
