package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seedf75a49c6/weave/fastdp"
	"github.com/seedf75a49c6/weave/internal/version"
	"github.com/seedf75a49c6/weave/linkstate"
	"github.com/seedf75a49c6/weave/prog/weaver/httpapi"
	"github.com/seedf75a49c6/weave/sleeve"
	wmesh "github.com/weaveworks/mesh"
)

// linkSummaryInterval is how often this router's link summary is
// rebuilt; linkstate sends it only when it changed (at most once per
// linkstate.MinInterval) or every linkstate.Refresh.
const linkSummaryInterval = 500 * time.Millisecond

// pageState is what the status page and `weave status links` need
// beyond the report: the gossiped link summaries and the counters the
// traffic rates are computed from.
type pageState struct {
	table *linkstate.Table
	mu    sync.Mutex
	// samples of the last rateWindow, oldest first: the rates are
	// averaged over it, not over one noisy tick.
	samples []trafficSample
}

type trafficSample struct {
	at  time.Time
	cnt map[string]httpapi.LinkTraffic // by remote peer
}

// sleeveOverlay is the data path name sleeve connections report.
const sleeveOverlay = "sleeve"

// rateWindow is what "recent" traffic rates average over.
const rateWindow = 10 * time.Second

var _ httpapi.PageSource = (*backend)(nil)

// startLinkState registers the link summary gossip channel (before mesh
// starts, as the other channels) and keeps our own summary current.
func (d *daemon) startLinkState(ctx context.Context, b *backend) error {
	t := linkstate.New(b.mesh.Ourself.Name)
	g, err := b.mesh.NewGossip(linkstate.ChannelName, t)
	if err != nil {
		return fmt.Errorf("register link summary gossip channel: %w", err)
	}
	t.SetGossip(g)
	b.mesh.Peers.OnGC(func(p *wmesh.Peer) {
		gone := p.Name.String()
		t.Prune(func(peer string) bool { return peer != gone })
	})
	b.page = &pageState{table: t}
	d.every(ctx, linkSummaryInterval, func(now time.Time) { b.publishLinks(now) })
	return nil
}

// publishLinks builds our summary from the live connections and the
// overlays' counters and hands it to linkstate.
func (b *backend) publishLinks(now time.Time) {
	rr := httpapi.RouterReportFromMesh(wmesh.NewStatus(b.mesh))
	links := httpapi.LocalLinks(&rr)
	cur := b.linkCounters(rr.OverlayDiagnostics, links)
	for i := range links {
		c := cur[links[i].Peer]
		links[i].RTT, links[i].RTTBy = c.RTT.Microseconds(), c.RTTBy
	}
	p := b.page
	p.mu.Lock()
	for len(p.samples) > 1 && now.Sub(p.samples[1].at) >= rateWindow {
		p.samples = p.samples[1:]
	}
	if len(p.samples) > 0 {
		base := p.samples[0]
		secs := now.Sub(base.at).Seconds()
		for i := range links {
			l := &links[i]
			c, ok := cur[l.Peer]
			old, had := base.cnt[l.Peer]
			if !ok || !had || secs <= 0 {
				continue
			}
			l.TxFPS, l.RxFPS = perSecond(c.TxFrames, old.TxFrames, secs), perSecond(c.RxFrames, old.RxFrames, secs)
			l.TxBPS, l.RxBPS = perSecond(c.TxBytes, old.TxBytes, secs), perSecond(c.RxBytes, old.RxBytes, secs)
		}
	}
	p.samples = append(p.samples, trafficSample{at: now, cnt: cur})
	p.mu.Unlock()
	p.table.SetOwn(linkstate.Summary{NickName: rr.NickName, Software: version.Version, Links: links})
}

func perSecond(now, before uint64, secs float64) float64 {
	if now < before { // counters restarted with a new connection
		return 0
	}
	return float64(now-before) / secs
}

// linkCounters is linkCounters with the data path of each of our links
// and the RTTs of our liveness detector (none with --no-liveness).
func (b *backend) linkCounters(diag any, links []linkstate.Link) map[string]httpapi.LinkTraffic {
	overlay := make(map[string]string, len(links))
	for _, l := range links {
		if l.Peer != "" {
			overlay[l.Peer] = l.Overlay
		}
	}
	var probeRTT func(string) (time.Duration, bool)
	if det := b.live.Load(); det != nil {
		probeRTT = det.RTT
	}
	return linkCounters(diag, overlay, probeRTT)
}

// linkCounters sums, per remote peer, the frames and UDP payload bytes
// sleeve counted and the packets and bytes of the link's VXLAN device
// (the kernel counts those). The RTT follows the link's data path
// (overlay, by peer): on fastdp the VXLAN heartbeat's; on sleeve, which
// has no round trip of its own, probeRTT's (the liveness probe's over the
// same underlay; none when probeRTT is nil), never a fastdp heartbeat's
// from before the fallback.
func linkCounters(diag any, overlay map[string]string, probeRTT func(peer string) (time.Duration, bool)) map[string]httpapi.LinkTraffic {
	out := map[string]httpapi.LinkTraffic{}
	m, _ := diag.(map[string]any)
	s, _ := m["sleeve"].(sleeve.Diagnostics)
	for _, pd := range s.Peers {
		c := out[pd.Peer]
		c.TxFrames += pd.Counters.TxFrames
		c.RxFrames += pd.Counters.RxFrames
		c.TxBytes += pd.Counters.TxBytes
		c.RxBytes += pd.Counters.RxBytes
		c.HasBytes = true
		out[pd.Peer] = c
	}
	if f, ok := m[fastdp.DisplayName].(fastdp.Status); ok {
		for _, l := range f.Links {
			c := out[l.Peer]
			c.TxFrames += sysCounter(l.Device, "tx_packets")
			c.RxFrames += sysCounter(l.Device, "rx_packets")
			c.TxBytes += sysCounter(l.Device, "tx_bytes")
			c.RxBytes += sysCounter(l.Device, "rx_bytes")
			c.HasBytes = true
			if l.RTT > 0 && overlay[l.Peer] != sleeveOverlay {
				c.RTT, c.RTTBy = l.RTT, linkstate.RTTHeartbeat
			}
			out[l.Peer] = c
		}
	}
	for _, pd := range s.Peers {
		c := out[pd.Peer]
		if probeRTT == nil || overlay[pd.Peer] != sleeveOverlay {
			continue
		}
		if rtt, ok := probeRTT(pd.Peer); ok {
			c.RTT, c.RTTBy = rtt, linkstate.RTTProbe
			out[pd.Peer] = c
		}
	}
	return out
}

// sysCounter reads a network device statistic; 0 when unreadable.
func sysCounter(dev, name string) uint64 {
	if dev == "" || strings.ContainsAny(dev, "/.") {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("/sys/class/net", dev, "statistics", name))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// LinkSummaries implements httpapi.PageSource.
func (b *backend) LinkSummaries() map[string]linkstate.Summary {
	if b.page == nil {
		return nil
	}
	return b.page.table.All()
}

// Containers implements httpapi.PageSource: what IPAM has allocated here.
func (b *backend) Containers() map[string][]string {
	if b.ipam == nil {
		return nil
	}
	owned, err := b.ipam.Owned()
	if err != nil {
		return nil
	}
	out := make(map[string][]string, len(owned))
	for id, cidrs := range owned {
		for _, c := range cidrs {
			out[id] = append(out[id], c.String())
		}
	}
	return out
}
