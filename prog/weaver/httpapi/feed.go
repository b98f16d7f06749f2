package httpapi

import (
	"cmp"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/seedf75a49c6/weave/dns"
	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/linkstate"
	"github.com/seedf75a49c6/weave/router"
)

// The feed is the page's data (GET /ui/feed, and each event of
// /ui/events): the whole mesh as this router knows it, built from the
// report, the link summaries our routers gossip and the containers
// attached here. It holds no secret: no password, no session key.

// PageSource is what the page needs beyond Backend.Report.
type PageSource interface {
	Report() Report
	// LinkSummaries are our routers' link summaries by peer name (ours
	// included); nil when none arrived.
	LinkSummaries() map[string]linkstate.Summary
	// Containers are the containers attached on this host: id -> CIDRs.
	Containers() map[string][]string
}

// Feed is the page's document.
type Feed struct {
	Self       string          `json:"self"`
	SelfNick   string          `json:"selfNick"`
	Version    string          `json:"version"`
	Encryption bool            `json:"encryption"`
	Peers      []FeedPeer      `json:"peers"`
	Links      []FeedLink      `json:"links"`
	IPAM       *FeedIPAM       `json:"ipam,omitempty"`
	DNS        *FeedDNS        `json:"dns,omitempty"`
	Containers []FeedContainer `json:"containers"`
}

// Software values of FeedPeer.
const (
	SoftwareOurs   = "ours"  // sends link summaries
	SoftwareWeave2 = "2.8.1" // in the topology, sends none: Weave Net 2.8.1 (or one of ours not yet heard from)
	// SoftwareUnknown: a peer only liveness remembers (mesh forgot it,
	// and its summary with it).
	SoftwareUnknown = "unknown"
)

// FeedPeer is one peer.
type FeedPeer struct {
	Name     string `json:"name"`
	Nick     string `json:"nick"`
	Address  string `json:"address,omitempty"` // host of a connection made to it
	Software string `json:"software"`
	Release  string `json:"release,omitempty"` // our version string, from its summary
	Self     bool   `json:"self,omitempty"`
	// InTopology is false for a peer only liveness still holds (dead and
	// forgotten by mesh).
	InTopology bool       `json:"inTopology"`
	Liveness   string     `json:"liveness,omitempty"` // alive, suspect, dead; "" with --no-liveness
	Since      *time.Time `json:"since,omitempty"`
	Reachable  bool       `json:"reachable"`     // we have a route to it (always true for us)
	Via        string     `json:"via,omitempty"` // next hop when not a direct neighbour
	Share      float64    `json:"share"`         // percent of the IPAM range it owns
}

// Link kinds: how the page draws a link.
const (
	KindFastDP      = "fastdp"
	KindSleeve      = "sleeve"
	KindFallback    = "sleeve-fallback" // sleeve because the preferred path failed (Fallback says why)
	KindEstablished = "established"     // up, data path unknown (no summary: a 2.8.1 end)
	KindConnecting  = "connecting"      // pending, connecting or retrying
	KindFailed      = "failed"          // a target whose last attempt failed (failed, or retrying after an error)
	KindRelayed     = "relayed"         // no direct link from us; reached via another peer
)

// FeedLink is a link between two peers (A < B by name, except relayed
// and unresolved-target links, which start at us).
type FeedLink struct {
	A     string `json:"a"`
	B     string `json:"b"`               // "" for a target whose peer is unknown
	Addr  string `json:"addr,omitempty"`  // target address (B unknown) or mesh address
	Kind  string `json:"kind"`            // one of the Kind constants
	State string `json:"state"`           // topology: established or pending; or the target's state
	Info  string `json:"info,omitempty"`  // error of a failed target
	Via   string `json:"via,omitempty"`   // relayed: our next hop
	Local bool   `json:"local,omitempty"` // one end is us
	// Ends are each end's own view, from its summary (or, for us, live).
	Ends []FeedLinkEnd `json:"ends,omitempty"`
}

// FeedLinkEnd is one end's view of a link.
type FeedLinkEnd struct {
	From string `json:"from"`
	linkstate.Link
	Time int64 `json:"time"` // unix seconds when that end made its summary
	// Stale: that end is dead or unreachable from here, so its view is
	// the last one heard.
	Stale bool `json:"stale,omitempty"`
}

// FeedIPAM is the ring.
type FeedIPAM struct {
	Status           string             `json:"status"`
	Range            string             `json:"range"`
	Size             int                `json:"size"`
	LocalUsed        int                `json:"localUsed"`
	LocalFree        int                `json:"localFree"` // our share minus what we use
	Shares           []FeedShare        `json:"shares"`
	Unreachable      int                `json:"unreachable"` // addresses owned by peers we cannot reach
	PendingClaims    []ipam.ClaimStatus `json:"pendingClaims"`
	PendingAllocates []string           `json:"pendingAllocates"`
	Problem          string             `json:"problem,omitempty"`
	Paxos            *ipam.PaxosStatus  `json:"paxos,omitempty"`
}

// FeedShare is one owner's part of the ring.
type FeedShare struct {
	Peer      string  `json:"peer"`
	Nick      string  `json:"nick"`
	Size      int     `json:"size"`
	Percent   float64 `json:"percent"`
	Reachable bool    `json:"reachable"`
}

// FeedDNS is weaveDNS's table (live entries).
type FeedDNS struct {
	Domain  string         `json:"domain"`
	Entries []FeedDNSEntry `json:"entries"`
}

// FeedDNSEntry is one name.
type FeedDNSEntry struct {
	Name      string `json:"name"`
	Address   string `json:"address"`
	Origin    string `json:"origin"`
	Container string `json:"container"`
}

// FeedContainer is a container attached here.
type FeedContainer struct {
	ID        string   `json:"id"`
	Addresses []string `json:"addresses"`
	Names     []string `json:"names,omitempty"` // its weaveDNS names
}

// LocalLinks is this router's view of its own links, as gossiped in its
// summary: one per established connection (the remote peer parsed from
// mesh's Info "<overlay> <name>(<nick>)") and one per target not
// connected (its peer unknown).
func LocalLinks(rr *RouterReport) []linkstate.Link {
	var out []linkstate.Link
	for _, c := range rr.Connections {
		l := linkstate.Link{Address: c.Address, State: c.State}
		if c.Attrs == nil { // a target: failed, connecting, retrying, waiting
			l.Peer = ""
			out = append(out, l)
			continue
		}
		l.Peer = infoPeer(c.Info)
		if s, ok := c.Attrs["name"].(string); ok {
			l.Overlay = s
		}
		l.MTU = attrInt(c.Attrs["mtu"])
		if s, ok := c.Attrs[router.FallbackAttr].(string); ok {
			l.Fallback = s
		}
		l.Encrypted, _ = c.Attrs["encrypted"].(bool)
		out = append(out, l)
	}
	return out
}

// infoPeer extracts the peer name from mesh's connection info
// "[encrypted ]<overlay> <name>(<nick>)".
func infoPeer(info string) string {
	f := strings.Fields(info)
	if len(f) == 0 {
		return ""
	}
	name, _, _ := strings.Cut(f[len(f)-1], "(")
	return name
}

func attrInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	case uint16:
		return int(n)
	}
	return 0
}

// BuildFeed assembles the feed from a report, the link summaries and the
// attached containers, at time now.
func BuildFeed(rep *Report, sums map[string]linkstate.Summary, containers map[string][]string, now time.Time) Feed {
	r := &rep.Router
	f := Feed{Self: r.Name, SelfNick: r.NickName, Version: rep.Version, Encryption: r.Encryption,
		Peers: []FeedPeer{}, Links: []FeedLink{}, Containers: []FeedContainer{}}
	// Our own end is always live, not the rate-limited gossiped copy.
	if sums == nil {
		sums = map[string]linkstate.Summary{}
	} else {
		sums = maps.Clone(sums)
	}
	own := sums[r.Name]
	own.Peer, own.NickName, own.Software = r.Name, r.NickName, rep.Version
	if own.Time == 0 {
		own.Time = now.Unix()
	}
	own.Links = withRates(LocalLinks(r), sums[r.Name].Links)
	sums[r.Name] = own

	routes := map[string]string{}
	for _, u := range r.UnicastRoutes {
		routes[u.Dest] = u.Via
	}
	peers := map[string]*FeedPeer{}
	addPeer := func(name, nick string) *FeedPeer {
		if p, ok := peers[name]; ok {
			if p.Nick == "" {
				p.Nick = nick
			}
			return p
		}
		p := &FeedPeer{Name: name, Nick: nick, Software: SoftwareWeave2, Self: name == r.Name}
		if s, ok := sums[name]; ok {
			p.Software, p.Release = SoftwareOurs, s.Software
		}
		via, ok := routes[name]
		p.Reachable = p.Self || ok
		if ok && via != name {
			p.Via = via
		}
		peers[name] = p
		return p
	}
	addPeer(r.Name, r.NickName).InTopology = true
	type pair struct{ a, b string }
	conns := map[pair]*FeedLink{}
	dirs := map[pair]int{}         // established directions seen
	inbound := map[string]string{} // peer -> host it connected from
	for _, p := range r.Peers {
		addPeer(p.Name, p.NickName).InTopology = true
		for _, c := range p.Connections {
			q := addPeer(c.Name, c.NickName)
			if c.Outbound && q.Address == "" {
				q.Address = hostOf(c.Address)
			} else if !c.Outbound {
				inbound[c.Name] = hostOf(c.Address)
			}
			k := pair{min(p.Name, c.Name), max(p.Name, c.Name)}
			if conns[k] == nil {
				conns[k] = &FeedLink{A: k.a, B: k.b, State: "pending"}
			}
			if c.Established {
				dirs[k]++
			}
		}
	}
	for k, n := range dirs {
		if n >= 2 {
			conns[k].State = "established"
		}
	}
	for from, s := range sums {
		for _, l := range s.Links {
			if l.Peer == "" {
				continue
			}
			k := pair{min(from, l.Peer), max(from, l.Peer)}
			fl := conns[k]
			if fl == nil { // a summary knows a link the topology does not (yet)
				fl = &FeedLink{A: k.a, B: k.b, State: "pending"}
				conns[k] = fl
				addPeer(from, s.NickName)
				addPeer(l.Peer, "")
			}
			fl.Ends = append(fl.Ends, FeedLinkEnd{From: from, Link: l, Time: s.Time})
		}
	}
	for name, host := range inbound {
		if p := peers[name]; p.Address == "" {
			p.Address = host // no one dialled it: where it dialled from
		}
	}
	for name, l := range r.Liveness {
		p := addPeer(name, l.NickName)
		if !p.InTopology && p.Software == SoftwareWeave2 {
			p.Software = SoftwareUnknown
		}
		p.Liveness = l.State
		since := l.Since
		p.Since = &since
	}
	for _, fl := range conns {
		fl.Local = fl.A == r.Name || fl.B == r.Name
		for i := range fl.Ends {
			p := peers[fl.Ends[i].From]
			fl.Ends[i].Stale = p != nil && (!p.Reachable || p.Liveness == "dead")
		}
		slices.SortFunc(fl.Ends, func(x, y FeedLinkEnd) int { return cmp.Compare(x.From, y.From) })
		fl.Kind = linkKind(fl, r.Name)
		f.Links = append(f.Links, *fl)
	}
	// Targets we have no connection to: the peer at that address, when
	// we know one there and have no link to it, else unknown.
	byAddr := map[string]string{}
	for _, p := range peers {
		if p.Address != "" && !p.Self {
			byAddr[p.Address] = p.Name
		}
	}
	for _, c := range r.Connections {
		if c.Attrs != nil || c.State == "established" {
			continue
		}
		kind := KindConnecting
		if c.State == "failed" || c.State == "retrying" { // both carry the last error
			kind = KindFailed
		}
		fl := FeedLink{A: r.Name, Addr: c.Address, Kind: kind, State: c.State, Info: c.Info, Local: true}
		if peer, ok := byAddr[hostOf(c.Address)]; ok {
			if _, linked := conns[pair{min(r.Name, peer), max(r.Name, peer)}]; !linked {
				fl.A, fl.B = min(r.Name, peer), max(r.Name, peer)
				conns[pair{fl.A, fl.B}] = &fl
			}
		}
		f.Links = append(f.Links, fl)
	}
	// Peers we reach only through others.
	for _, p := range peers {
		if p.Self || p.Via == "" {
			continue
		}
		if _, direct := conns[pair{min(r.Name, p.Name), max(r.Name, p.Name)}]; direct {
			continue
		}
		f.Links = append(f.Links, FeedLink{A: r.Name, B: p.Name, Kind: KindRelayed, State: "relayed", Via: p.Via, Local: true})
	}
	slices.SortFunc(f.Links, func(x, y FeedLink) int {
		return cmp.Or(cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B), cmp.Compare(x.Addr, y.Addr), cmp.Compare(x.Kind, y.Kind))
	})
	f.IPAM = feedIPAM(rep, peers)
	f.DNS = feedDNS(rep)
	for _, name := range slices.Sorted(maps.Keys(peers)) {
		f.Peers = append(f.Peers, *peers[name])
	}
	f.Containers = feedContainers(containers, f.DNS, r.Name)
	return f
}

// withRates copies the traffic rates of the gossiped copy of our links
// (the daemon computes them) onto the live ones.
func withRates(live, gossiped []linkstate.Link) []linkstate.Link {
	for i := range live {
		for _, g := range gossiped {
			if g.Peer == live[i].Peer && g.Peer != "" {
				live[i].TxFPS, live[i].RxFPS, live[i].TxBPS, live[i].RxBPS = g.TxFPS, g.RxFPS, g.TxBPS, g.RxBPS
				live[i].RTT, live[i].RTTBy = g.RTT, g.RTTBy
			}
		}
	}
	return live
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// linkKind decides how a link is drawn: not established topology links
// are connecting (or failed when an end says so); established ones by
// their ends' data paths: our own live view for our links (the remote
// end's gossiped view is at most a second or two old; both are in Ends),
// else the worse end winning.
func linkKind(fl *FeedLink, self string) string {
	if fl.State != "established" {
		for _, e := range fl.Ends {
			if e.State == "failed" {
				return KindFailed
			}
		}
		return KindConnecting
	}
	kind := ""
	rank := map[string]int{KindFastDP: 1, KindSleeve: 2, KindFallback: 3}
	ends := fl.Ends
	for _, e := range fl.Ends {
		if e.From == self {
			ends = []FeedLinkEnd{e}
		}
	}
	for _, e := range ends {
		k := ""
		switch {
		case e.Overlay == "sleeve" && e.Fallback != "":
			k = KindFallback
		case e.Overlay == "sleeve":
			k = KindSleeve
		case e.Overlay == "fastdp" && e.Fallback == "":
			k = KindFastDP
		default:
			continue
		}
		if rank[k] > rank[kind] {
			kind = k
		}
	}
	if kind == "" {
		return KindEstablished
	}
	return kind
}

func feedIPAM(rep *Report, peers map[string]*FeedPeer) *FeedIPAM {
	st, ok := rep.IPAM.(ipam.Status)
	if !ok {
		return nil
	}
	out := &FeedIPAM{Status: st.State, Range: st.Range, Size: st.RangeNumIPs, LocalUsed: st.ActiveIPs,
		PendingClaims: st.PendingClaims, PendingAllocates: st.PendingAllocates, Problem: st.Problem, Paxos: st.Paxos,
		Shares: []FeedShare{}}
	if out.PendingClaims == nil {
		out.PendingClaims = []ipam.ClaimStatus{}
	}
	if out.PendingAllocates == nil {
		out.PendingAllocates = []string{}
	}
	by := map[string]*FeedShare{}
	for _, e := range st.Entries {
		s := by[e.Peer]
		if s == nil {
			s = &FeedShare{Peer: e.Peer, Nick: e.Nickname, Reachable: e.IsKnownPeer}
			by[e.Peer] = s
		}
		s.Size += int(e.Size)
		if !e.IsKnownPeer {
			out.Unreachable += int(e.Size)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(by)) {
		s := by[name]
		if st.RangeNumIPs > 0 {
			s.Percent = 100 * float64(s.Size) / float64(st.RangeNumIPs)
		}
		if p := peers[name]; p != nil {
			p.Share = s.Percent
		}
		if name == rep.Router.Name {
			out.LocalFree = max(0, s.Size-st.ActiveIPs)
		}
		out.Shares = append(out.Shares, *s)
	}
	return out
}

func feedDNS(rep *Report) *FeedDNS {
	st, ok := rep.DNS.(*dns.Status)
	if !ok || st == nil {
		return nil
	}
	out := &FeedDNS{Domain: st.Domain, Entries: []FeedDNSEntry{}}
	for _, e := range st.Entries {
		if e.Tombstone != 0 {
			continue
		}
		out.Entries = append(out.Entries, FeedDNSEntry{Name: e.Hostname, Address: e.Address, Origin: e.Origin, Container: e.ContainerID})
	}
	slices.SortFunc(out.Entries, func(x, y FeedDNSEntry) int {
		return cmp.Or(cmp.Compare(x.Name, y.Name), cmp.Compare(x.Address, y.Address))
	})
	return out
}

func feedContainers(cs map[string][]string, d *FeedDNS, self string) []FeedContainer {
	out := []FeedContainer{}
	for _, id := range slices.Sorted(maps.Keys(cs)) {
		c := FeedContainer{ID: id, Addresses: slices.Clone(cs[id])}
		if d != nil {
			for _, e := range d.Entries {
				if e.Container == id && e.Origin == self {
					c.Names = append(c.Names, e.Name)
				}
			}
		}
		out = append(out, c)
	}
	return out
}
