package liveness

import (
	"log/slog"
	"slices"
	"time"
)

// ReclaimConfig configures a Reclaimer.
type ReclaimConfig struct {
	After time.Duration // a peer must be dead this long; > 0
	Us    string        // our peer name
	// Holders lists the peers holding IPAM ring tokens (may include us).
	Holders func() []string
	// MeshKnows reports whether mesh still has peer in its topology; peers
	// liveness never saw (Weave 2.8.1) count as alive while it does.
	MeshKnows func(peer string) bool
	// Takeover reclaims peer's space (ipam's rmpeer path, which itself
	// waits for every other token holder to acknowledge).
	Takeover func(peer string) error
	Logger   *slog.Logger
}

// Reclaimer decides when a dead peer's IPAM space is taken over
// automatically (--ipalloc-reclaim-after). A dead token holder D is
// reclaimed, once, when all of these hold:
//
//   - liveness has had D dead for at least After;
//   - D is the only token holder we cannot see alive: then the peers
//     that must acknowledge the takeover are all alive, and a partition
//     (where several holders vanish together) never triggers it, on
//     either side;
//   - we and the holders we see alive are a strict majority of the
//     holders, so a minority never reclaims;
//   - we are the lowest-named live holder, so one peer does it.
type Reclaimer struct {
	cfg  ReclaimConfig
	src  interface{ Get(string) Status }
	done map[string]time.Time // peer -> the Since of the death we reclaimed
}

// NewReclaimer returns a reclaimer reading liveness from src (a Detector).
func NewReclaimer(cfg ReclaimConfig, src interface{ Get(string) Status }) *Reclaimer {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Reclaimer{cfg: cfg, src: src, done: map[string]time.Time{}}
}

// Tick makes one decision at time now and acts on it. It returns the peer
// reclaimed, or "".
func (r *Reclaimer) Tick(now time.Time) string {
	peer := r.candidate(now)
	if peer == "" {
		return ""
	}
	since := r.src.Get(peer).Since
	if err := r.cfg.Takeover(peer); err != nil {
		r.cfg.Logger.Warn("automatic reclaim of a dead peer's IPAM space failed; will retry",
			"component", "liveness", "peer", peer, "err", err)
		return ""
	}
	r.done[peer] = since
	r.cfg.Logger.Info("reclaimed IPAM space of a dead peer", "component", "liveness", "peer", peer,
		"dead_since", since.UTC().Format(time.RFC3339))
	return peer
}

func (r *Reclaimer) alive(peer string) bool {
	if peer == r.cfg.Us {
		return true
	}
	switch r.src.Get(peer).State {
	case Alive:
		return true
	case Unknown:
		return r.cfg.MeshKnows(peer)
	}
	return false
}

func (r *Reclaimer) candidate(now time.Time) string {
	holders := slices.Compact(slices.Sorted(slices.Values(r.cfg.Holders())))
	var missing, live []string
	for _, h := range holders {
		if r.alive(h) {
			live = append(live, h)
		} else {
			missing = append(missing, h)
		}
	}
	if len(missing) != 1 || 2*len(live) <= len(holders) {
		return ""
	}
	// The lowest-named live peer acts; a peer without tokens may be it.
	if slices.ContainsFunc(live, func(h string) bool { return h < r.cfg.Us }) {
		return ""
	}
	d := missing[0]
	s := r.src.Get(d)
	if s.State != Dead || now.Sub(s.Since) < r.cfg.After || r.done[d].Equal(s.Since) {
		return ""
	}
	return d
}
