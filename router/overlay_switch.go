package router

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/weaveworks/mesh"
)

// OverlaysFeature is the connection feature listing a peer's overlays,
// space-separated, in its preference order.
const OverlaysFeature = "Overlays"

// compatOverlayName is the overlay used, unwrapped, with peers that do not
// send the Overlays feature.
const compatOverlayName = "sleeve"

// ErrNoCommonOverlay is returned by PrepareConnection when the remote peer
// supports none of our overlays.
var ErrNoCommonOverlay = errors.New("no overlays in common with peer")

// HealthNotifier may be implemented by a Forwarder that can be temporarily
// unusable without failing (e.g. fastdp after lost heartbeats). It sends
// false when the forwarder goes on hold and true when it is healthy again.
// The switch prefers forwarders that are not on hold.
type HealthNotifier interface {
	HealthChannel() <-chan bool
}

// FeatureAdder may be implemented by an Overlay that advertises extra
// connection features of its own (e.g. sleeve's "SleeveJumbo"). The switch's
// AddFeaturesTo calls it on each overlay after setting "Overlays"; the
// overlay reads the remote's answer from the params.Features that
// PrepareConnection receives. Peers that do not know a feature ignore it.
type FeatureAdder interface {
	AddFeaturesTo(features map[string]string)
}

// OverlaySwitch is the mesh.Overlay that offers every registered Overlay to
// each mesh connection and forwards over the best established one.
type OverlaySwitch struct {
	log      *slog.Logger
	overlays []Overlay

	// fwds maps remote peer -> its confirmed switch forwarder. The map is
	// immutable once published; writers copy it under fwdsMu.
	fwds   atomic.Pointer[map[mesh.PeerName]*SwitchForwarder]
	fwdsMu sync.Mutex

	stopOnce sync.Once
}

var _ mesh.Overlay = (*OverlaySwitch)(nil)

// NewOverlaySwitch builds a switch over overlays in preference order.
func NewOverlaySwitch(log *slog.Logger, overlays ...Overlay) *OverlaySwitch {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &OverlaySwitch{log: log, overlays: overlays}
	empty := map[mesh.PeerName]*SwitchForwarder{}
	s.fwds.Store(&empty)
	return s
}

// AddFeaturesTo implements mesh.Overlay: it advertises our overlay names.
func (s *OverlaySwitch) AddFeaturesTo(features map[string]string) {
	names := make([]string, len(s.overlays))
	for i, o := range s.overlays {
		names[i] = o.Name()
	}
	features[OverlaysFeature] = strings.Join(names, " ")
	for _, o := range s.overlays {
		if fa, ok := o.(FeatureAdder); ok {
			fa.AddFeaturesTo(features)
		}
	}
}

// PrepareConnection implements mesh.Overlay.
func (s *OverlaySwitch) PrepareConnection(params mesh.OverlayConnectionParams) (mesh.OverlayConnection, error) {
	remote := params.RemotePeer.Name
	// Not params.RemotePeer.String(): mesh updates NickName concurrently.
	remoteStr := peerString(remote, params.Features)
	theirs, ok := params.Features[OverlaysFeature]
	if !ok {
		return s.prepareCompat(params)
	}
	common := s.commonOverlays(strings.Fields(theirs))
	if len(common) == 0 {
		return nil, fmt.Errorf("prepare connection to %s: %w", remoteStr, ErrNoCommonOverlay)
	}
	subs := make([]Forwarder, len(common))
	names := make([]string, len(common))
	reasons := make([]string, len(common))
	prepared := 0
	for i, o := range common {
		names[i] = displayName(o)
		p := params
		p.SendControlMessage = wrapControl(byte(i), params.SendControlMessage)
		fwd, err := o.PrepareConnection(p)
		if err != nil {
			s.log.Warn("overlay cannot prepare connection", "overlay", o.Name(), "peer", remoteStr, "err", err)
			reasons[i] = err.Error()
			continue
		}
		subs[i] = fwd
		prepared++
	}
	if prepared == 0 {
		return nil, fmt.Errorf("prepare connection to %s: no overlay could prepare it", remoteStr)
	}
	f := newSwitchForwarder(s, remote, remoteStr, names, subs, false)
	copy(f.reasons, reasons)
	return f, nil
}

func (s *OverlaySwitch) prepareCompat(params mesh.OverlayConnectionParams) (mesh.OverlayConnection, error) {
	remoteStr := peerString(params.RemotePeer.Name, params.Features)
	for _, o := range s.overlays {
		if o.Name() != compatOverlayName {
			continue
		}
		fwd, err := o.PrepareConnection(params)
		if err != nil {
			return nil, fmt.Errorf("prepare compat connection to %s: %w", remoteStr, err)
		}
		return newSwitchForwarder(s, params.RemotePeer.Name, remoteStr,
			[]string{displayName(o)}, []Forwarder{fwd}, true), nil
	}
	return nil, fmt.Errorf("prepare connection to %s: peer has no Overlays feature and we have no %q overlay: %w",
		remoteStr, compatOverlayName, ErrNoCommonOverlay)
}

// peerString renders a peer as "name(nickname)" from the connection
// features.
func peerString(name mesh.PeerName, features map[string]string) string {
	return name.String() + "(" + features["NickName"] + ")"
}

// commonOverlays returns our overlays (in our order) that theirs lists, at
// most 256 so that an index fits in one byte.
func (s *OverlaySwitch) commonOverlays(theirs []string) []Overlay {
	var common []Overlay
	for _, o := range s.overlays {
		for _, n := range theirs {
			if n == o.Name() && len(common) < 256 {
				common = append(common, o)
				break
			}
		}
	}
	return common
}

// wrapControl makes a SendControlMessage that carries a sub-overlay's
// message as mesh tag 7 with payload [index][tag][body...].
func wrapControl(index byte, send func(byte, []byte) error) func(byte, []byte) error {
	return func(tag byte, msg []byte) error {
		buf := make([]byte, 2+len(msg))
		buf[0], buf[1] = index, tag
		copy(buf[2:], msg)
		return send(mesh.ProtocolOverlayControlMsg, buf)
	}
}

// Diagnostics implements mesh.Overlay: each overlay's diagnostics by its
// display name (the report's OverlayDiagnostics keys, "fastdp" as Weave's).
func (s *OverlaySwitch) Diagnostics() any {
	out := make(map[string]any, len(s.overlays))
	for _, o := range s.overlays {
		out[displayName(o)] = o.Diagnostics()
	}
	return out
}

// Stop implements mesh.Overlay: it stops every overlay. Idempotent.
func (s *OverlaySwitch) Stop() {
	s.stopOnce.Do(func() {
		for _, o := range s.overlays {
			o.Stop()
		}
	})
}

// Forwarder returns the confirmed forwarder to peer, or nil.
func (s *OverlaySwitch) Forwarder(peer mesh.PeerName) *SwitchForwarder {
	return s.forwarderFor(peer)
}

// forwarderFor is the allocation-free hot-path lookup.
func (s *OverlaySwitch) forwarderFor(peer mesh.PeerName) *SwitchForwarder {
	return (*s.fwds.Load())[peer]
}

func (s *OverlaySwitch) register(f *SwitchForwarder) {
	s.fwdsMu.Lock()
	defer s.fwdsMu.Unlock()
	old := *s.fwds.Load()
	m := make(map[mesh.PeerName]*SwitchForwarder, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[f.peer] = f
	s.fwds.Store(&m)
}

func (s *OverlaySwitch) unregister(f *SwitchForwarder) {
	s.fwdsMu.Lock()
	defer s.fwdsMu.Unlock()
	old := *s.fwds.Load()
	if old[f.peer] != f {
		return
	}
	m := make(map[mesh.PeerName]*SwitchForwarder, len(old))
	for k, v := range old {
		if k != f.peer {
			m[k] = v
		}
	}
	s.fwds.Store(&m)
}
