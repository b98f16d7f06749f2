package router

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/weaveworks/mesh"
)

const remoteName = mesh.PeerName(0xaa0000000002)

type sentMsg struct {
	tag byte
	msg []byte
}

// connParams returns params for a connection to remoteName whose outer
// SendControlMessage records into sent.
func connParams(features map[string]string, sent *[]sentMsg, mu *sync.Mutex) mesh.OverlayConnectionParams {
	return mesh.OverlayConnectionParams{
		RemotePeer: &mesh.Peer{Name: remoteName},
		Features:   features,
		SendControlMessage: func(tag byte, msg []byte) error {
			mu.Lock()
			defer mu.Unlock()
			*sent = append(*sent, sentMsg{tag, append([]byte(nil), msg...)})
			return nil
		},
	}
}

func newTestSwitch() (*OverlaySwitch, *fakeOverlay, *fakeOverlay) {
	fast, sleeve := &fakeOverlay{name: "fastdp"}, &fakeOverlay{name: "sleeve"}
	return NewOverlaySwitch(nil, fast, sleeve), fast, sleeve
}

func TestSwitchAdvertisesOverlaysInOrder(t *testing.T) {
	sw, _, _ := newTestSwitch()
	f := map[string]string{"Name": "x"}
	sw.AddFeaturesTo(f)
	if f["Overlays"] != "fastdp sleeve" || f["Name"] != "x" {
		t.Fatalf("features = %v", f)
	}
	d, _ := sw.Diagnostics().(map[string]any)
	if d["fastdp"] != "diag-fastdp" || d["sleeve"] != "diag-sleeve" || len(d) != 2 {
		t.Fatalf("diagnostics = %v", sw.Diagnostics())
	}
}

func TestSwitchCompatModeUsesSleeveUnwrapped(t *testing.T) {
	sw, fast, sleeve := newTestSwitch()
	var sent []sentMsg
	var mu sync.Mutex
	conn, err := sw.PrepareConnection(connParams(map[string]string{"NickName": "h2"}, &sent, &mu))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Stop()
	if fast.last() != nil {
		t.Fatal("fastdp prepared for a legacy peer")
	}
	sf := sleeve.last()
	if sf == nil {
		t.Fatal("sleeve not prepared")
	}
	// Outgoing: raw tag, no wrapper.
	if err := sf.params.SendControlMessage(mesh.ProtocolReserved2, []byte("ab")); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || sent[0].tag != mesh.ProtocolReserved2 || string(sent[0].msg) != "ab" {
		t.Fatalf("sent = %+v", sent)
	}
	// Incoming: raw tag passed straight through.
	conn.ControlMessage(mesh.ProtocolReserved3, []byte{0x05, 0x9e})
	if got := sf.received(); len(got) != 1 || got[0] != (ctrlMsg{mesh.ProtocolReserved3, "\x05\x9e"}) {
		t.Fatalf("sleeve received %+v", got)
	}
}

func TestSwitchNoCommonOverlay(t *testing.T) {
	sw, _, _ := newTestSwitch()
	var sent []sentMsg
	var mu sync.Mutex
	_, err := sw.PrepareConnection(connParams(map[string]string{"Overlays": "awsvpc"}, &sent, &mu))
	if !errors.Is(err, ErrNoCommonOverlay) || !strings.Contains(err.Error(), "no overlays in common with peer") {
		t.Fatalf("err = %v", err)
	}
}

// prepared returns a confirmed switch forwarder over fastdp and sleeve
// (remote lists them in the other order; ours must win).
func prepared(t *testing.T) (*OverlaySwitch, *SwitchForwarder, *fakeFwd, *fakeFwd, *[]sentMsg, *sync.Mutex) {
	t.Helper()
	sw, fast, sleeve := newTestSwitch()
	sent, mu := &[]sentMsg{}, &sync.Mutex{}
	conn, err := sw.PrepareConnection(connParams(map[string]string{"Overlays": "sleeve other fastdp"}, sent, mu))
	if err != nil {
		t.Fatal(err)
	}
	f := conn.(*SwitchForwarder)
	t.Cleanup(f.Stop)
	f.Confirm()
	return sw, f, fast.last(), sleeve.last(), sent, mu
}

func TestSwitchControlMessageLayout(t *testing.T) {
	_, f, ff, sf, sent, mu := prepared(t)
	if err := sf.params.SendControlMessage(3, []byte{0x05, 0x9e}); err != nil {
		t.Fatal(err)
	}
	if err := ff.params.SendControlMessage(0, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := append([]sentMsg(nil), (*sent)...)
	mu.Unlock()
	if len(got) != 2 || got[0].tag != mesh.ProtocolOverlayControlMsg || string(got[0].msg) != "\x01\x03\x05\x9e" ||
		got[1].tag != mesh.ProtocolOverlayControlMsg || string(got[1].msg) != "\x00\x00" {
		t.Fatalf("wrapped messages = %+v", got)
	}
	f.ControlMessage(mesh.ProtocolOverlayControlMsg, []byte{1, 2, 'x', 'y'})
	f.ControlMessage(mesh.ProtocolOverlayControlMsg, []byte{0, 1})
	if r := sf.received(); len(r) != 1 || r[0] != (ctrlMsg{2, "xy"}) {
		t.Fatalf("sleeve received %+v", r)
	}
	if r := ff.received(); len(r) != 1 || r[0] != (ctrlMsg{1, ""}) {
		t.Fatalf("fastdp received %+v", r)
	}
}

func TestSwitchIgnoresMalformedControlMessages(t *testing.T) {
	_, f, ff, sf, _, _ := prepared(t)
	for _, m := range []struct {
		tag byte
		msg []byte
	}{
		{mesh.ProtocolOverlayControlMsg, nil},
		{mesh.ProtocolOverlayControlMsg, []byte{0}},
		{mesh.ProtocolOverlayControlMsg, []byte{2, 1}},
		{mesh.ProtocolOverlayControlMsg, []byte{255, 1, 1}},
		{mesh.ProtocolReserved1, []byte{0, 1}},
	} {
		f.ControlMessage(m.tag, m.msg) // must not panic
	}
	if len(ff.received())+len(sf.received()) != 0 {
		t.Fatalf("malformed messages were dispatched: %v %v", ff.received(), sf.received())
	}
}

func attrName(f *SwitchForwarder) any { return f.Attrs()["name"] }

func TestSwitchChoosesBestAndFallsBack(t *testing.T) {
	_, f, ff, sf, _, _ := prepared(t)
	if !ff.confirmed || !sf.confirmed {
		t.Fatal("sub-forwarders not confirmed")
	}
	select {
	case <-f.EstablishedChannel():
		t.Fatal("established before any sub-forwarder")
	default:
	}
	sf.establish()
	<-f.EstablishedChannel()
	eventually(t, "sleeve best", func() bool { return attrName(f) == "sleeve" })
	ff.establish()
	eventually(t, "fastdp best", func() bool { return attrName(f) == "fastdp" })

	// fastdp cannot carry the frame: sleeve gets it.
	ff.setErr(ErrCannotForward)
	if err := f.Forward(1, 2, make([]byte, 20)); err != nil {
		t.Fatalf("Forward = %v", err)
	}
	if ff.forwards.Load() != 1 || sf.forwards.Load() != 1 {
		t.Fatalf("forwards fastdp=%d sleeve=%d, want 1/1", ff.forwards.Load(), sf.forwards.Load())
	}
	// Other errors are returned, not retried.
	tooBig := error(&FrameTooBigError{MTU: 1376})
	ff.setErr(tooBig)
	if err := f.Forward(1, 2, make([]byte, 20)); err != tooBig { //nolint:errorlint // identity check
		t.Fatalf("Forward = %v, want the FrameTooBigError", err)
	}
	if sf.forwards.Load() != 1 {
		t.Fatal("sleeve tried after a non-ErrCannotForward error")
	}
	// fastdp on hold: sleeve becomes best; healthy again: fastdp.
	ff.health <- false
	eventually(t, "sleeve best while fastdp on hold", func() bool { return attrName(f) == "sleeve" })
	ff.health <- true
	eventually(t, "fastdp best again", func() bool { return attrName(f) == "fastdp" })
}

func TestSwitchErrorsWhenAllSubForwardersFail(t *testing.T) {
	sw, f, ff, sf, _, _ := prepared(t)
	ff.establish()
	sf.establish()
	eventually(t, "fastdp best", func() bool { return attrName(f) == "fastdp" })
	if sw.Forwarder(remoteName) != f {
		t.Fatal("confirmed forwarder not registered")
	}
	ff.errc <- errors.New("heartbeat timeout")
	eventually(t, "sleeve after fastdp failed", func() bool { return attrName(f) == "sleeve" })
	// The monitor stops the failed forwarder after re-choosing the best.
	eventually(t, "failed fastdp forwarder stopped", func() bool { return ff.stopCount() >= 1 })
	if ff.stopCount() != 1 {
		t.Fatalf("failed fastdp forwarder stopped %d times, want 1", ff.stopCount())
	}
	select {
	case err := <-f.ErrorChannel():
		t.Fatalf("switch failed with a working sleeve: %v", err)
	default:
	}
	sf.errc <- errors.New("sleeve broke")
	err := <-f.ErrorChannel()
	if err == nil || !strings.Contains(err.Error(), "no working forwarders to "+remoteName.String()) {
		t.Fatalf("err = %v", err)
	}
	if got := f.Forward(1, 2, make([]byte, 20)); !errors.Is(got, ErrCannotForward) {
		t.Fatalf("Forward with no forwarders = %v", got)
	}
	f.Stop()
	f.Stop()
	if sw.Forwarder(remoteName) != nil {
		t.Fatal("stopped forwarder still registered")
	}
	if ff.stopCount() != 1 || sf.stopCount() != 1 {
		t.Fatalf("stop counts fastdp=%d sleeve=%d, want 1/1", ff.stopCount(), sf.stopCount())
	}
}

func TestSwitchSkipsOverlayThatCannotPrepare(t *testing.T) {
	fast := &fakeOverlay{name: "fastdp", prepErr: errors.New("no short id")}
	sleeve := &fakeOverlay{name: "sleeve"}
	sw := NewOverlaySwitch(nil, fast, sleeve)
	sent, mu := &[]sentMsg{}, &sync.Mutex{}
	conn, err := sw.PrepareConnection(connParams(map[string]string{"Overlays": "fastdp sleeve"}, sent, mu))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Stop()
	conn.Confirm()
	// Index 1 still means sleeve: indices follow the common list.
	conn.ControlMessage(mesh.ProtocolOverlayControlMsg, []byte{1, 1})
	if r := sleeve.last().received(); len(r) != 1 || r[0].tag != 1 {
		t.Fatalf("sleeve received %+v", r)
	}
	sw.Stop()
	sw.Stop()
	if fast.stopped != 1 || sleeve.stopped != 1 {
		t.Fatalf("overlay stops fastdp=%d sleeve=%d, want 1/1", fast.stopped, sleeve.stopped)
	}
}

// featureOverlay is a fakeOverlay that also advertises a feature.
type featureOverlay struct{ fakeOverlay }

var _ FeatureAdder = (*featureOverlay)(nil)

func (o *featureOverlay) AddFeaturesTo(f map[string]string) { f["SleeveJumbo"] = "1" }

func TestSwitchAsksFeatureAddersForTheirFeatures(t *testing.T) {
	fast, sl := &fakeOverlay{name: "fastdp"}, &featureOverlay{fakeOverlay{name: "sleeve"}}
	sw := NewOverlaySwitch(nil, fast, sl)
	f := map[string]string{}
	sw.AddFeaturesTo(f)
	if f["Overlays"] != "fastdp sleeve" || f["SleeveJumbo"] != "1" || len(f) != 2 {
		t.Fatalf("features = %v, want Overlays and SleeveJumbo only", f)
	}
}
