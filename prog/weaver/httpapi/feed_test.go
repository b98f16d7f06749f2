package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/dns"
	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/linkstate"
	"github.com/seedf75a49c6/weave/prog/weaver/httpapi"
	"github.com/seedf75a49c6/weave/test/meshsim"
	wmesh "github.com/weaveworks/mesh"
)

// simReport is peer i's report in s, as the daemon builds it.
func simReport(s *meshsim.Sim, i int) httpapi.Report {
	return httpapi.Report{Ready: true, Version: "test", Router: httpapi.RouterReportFromMesh(wmesh.NewStatus(s.Peers[i].Mesh))}
}

func feedLink(f httpapi.Feed, a, b string) (httpapi.FeedLink, bool) {
	a, b = min(a, b), max(a, b)
	for _, l := range f.Links {
		if l.A == a && l.B == b && l.Kind != httpapi.KindRelayed {
			return l, true
		}
	}
	return httpapi.FeedLink{}, false
}

// TestFeedOfMeshsimTopology: p0 - p1 - p2 - p3 plus p1 - p3 in a real
// mesh. From p0, every peer and topology link is in the feed; p2 and p3
// are relayed via p1; a link whose ends gossip summaries is drawn by their
// data path (fastdp, sleeve with fallback, the worse end winning); a link
// with no summary (2.8.1 ends) is "established"; a peer without a summary
// is 2.8.1, and liveness, IPAM shares and DNS names come through.
func TestFeedOfMeshsimTopology(t *testing.T) {
	s := meshsim.New(t, 4, meshsim.Options{})
	for _, l := range [][2]int{{0, 1}, {1, 2}, {2, 3}, {1, 3}} {
		s.Connect(t, l[0], l[1])
	}
	s.AwaitConverged(t)
	name := func(i int) string { return s.Peers[i].Name.String() }
	awaitTopology(t, s, 0, 4)
	rep := simReport(s, 0)
	now := time.Unix(1_700_000_000, 0)
	since := now.Add(-90 * time.Second)
	rep.Router.Liveness = map[string]httpapi.PeerLiveness{
		name(3):             {NickName: "p3", State: "dead", Since: since},
		name(1):             {NickName: "p1", State: "alive", Since: since},
		"aa:00:00:00:00:77": {NickName: "gone", State: "dead", Since: since}, // mesh forgot it
	}
	rep.IPAM = ipam.Status{State: "ready", Range: "10.32.0.0/12", RangeNumIPs: 1000, ActiveIPs: 10, Entries: []ipam.EntryStatus{
		{Peer: name(0), Nickname: "p0", Size: 600, IsKnownPeer: true},
		{Peer: name(3), Nickname: "p3", Size: 400, IsKnownPeer: false},
	}}
	rep.DNS = &dns.Status{Domain: "weave.local.", Entries: []dns.StatusEntry{
		{Hostname: "web.weave.local.", Origin: name(0), ContainerID: "c0ffee", Address: "10.32.0.1"},
		{Hostname: "gone.weave.local.", Origin: name(0), ContainerID: "dead", Address: "10.32.0.2", Tombstone: 1},
	}}
	sums := map[string]linkstate.Summary{
		// our own gossiped copy: the daemon's rates and probe RTT ride on it
		name(0): {Peer: name(0), NickName: "p0", Software: "3.0.0", Version: 1, Time: now.Unix(), Links: []linkstate.Link{
			{Peer: name(1), State: "established", Overlay: "sleeve", TxFPS: 2, TxBPS: 2000, RxBPS: 900, RTT: 700, RTTBy: linkstate.RTTProbe},
		}},
		name(1): {Peer: name(1), NickName: "p1", Software: "3.0.0", Version: 1, Time: now.Unix() - 3, Links: []linkstate.Link{
			{Peer: name(2), State: "established", Overlay: "fastdp", MTU: 1376, TxFPS: 12, RTT: 420},
			{Peer: name(3), State: "established", Overlay: "sleeve", MTU: 1438, Fallback: "fastdp(no VXLAN heartbeat ack for 3s)",
				TxBPS: 1500, RxBPS: 300, RTT: 900, RTTBy: linkstate.RTTProbe},
		}},
		name(2): {Peer: name(2), NickName: "p2", Software: "3.0.0", Version: 1, Time: now.Unix() - 1, Links: []linkstate.Link{
			{Peer: name(1), State: "established", Overlay: "sleeve", MTU: 1438, Fallback: "fastdp(no VXLAN heartbeat ack for 3s)"},
		}},
	}
	f := httpapi.BuildFeed(&rep, sums, map[string][]string{"c0ffee": {"10.32.0.1/12"}}, now)

	if len(f.Peers) != 5 || f.Self != name(0) {
		t.Fatalf("feed has %d peers, self %s; want 4 and one only liveness knows, %s", len(f.Peers), f.Self, name(0))
	}
	peers := map[string]httpapi.FeedPeer{}
	for _, p := range f.Peers {
		peers[p.Nick] = p
	}
	if p := peers["p2"]; !p.Reachable || p.Via != name(1) || p.Software != httpapi.SoftwareOurs || p.Release != "3.0.0" {
		t.Errorf("p2 = %+v; want reachable via p1, ours 3.0.0", p)
	}
	if p := peers["p3"]; p.Software != httpapi.SoftwareWeave2 || p.Liveness != "dead" || p.Since == nil || !p.Since.Equal(since) || p.Share != 40 {
		t.Errorf("p3 = %+v; want 2.8.1, dead since %v, 40%% of the ring", p, since)
	}
	if p := peers["gone"]; p.InTopology || p.Software != httpapi.SoftwareUnknown || p.Liveness != "dead" || p.Reachable {
		t.Errorf("gone = %+v; want out of the topology, software unknown, dead, unreachable", p)
	}
	if p := peers["p0"]; !p.Self || p.Software != httpapi.SoftwareOurs || p.Share != 60 {
		t.Errorf("p0 = %+v; want self, ours, 60%%", p)
	}
	if p := peers["p1"]; p.Address != "127.0.0.1" {
		t.Errorf("p1 address %q, want the host p0 dialled", p.Address)
	}
	for _, c := range []struct {
		a, b int
		kind string
	}{
		{0, 1, httpapi.KindSleeve},      // our own end, live: meshsim's fake "sleeve" overlay
		{1, 2, httpapi.KindFallback},    // p1 says fastdp, p2 says sleeve with fallback: the worse wins
		{1, 3, httpapi.KindFallback},    // only p1 reports
		{2, 3, httpapi.KindEstablished}, // p2's summary lists no link to p3, p3 sends none
	} {
		l, ok := feedLink(f, name(c.a), name(c.b))
		if !ok {
			t.Errorf("no link p%d-p%d in %+v", c.a, c.b, f.Links)
			continue
		}
		if l.Kind != c.kind || l.State != "established" {
			t.Errorf("link p%d-p%d: kind %s state %s, want %s established", c.a, c.b, l.Kind, l.State, c.kind)
		}
	}
	l12, _ := feedLink(f, name(1), name(2))
	if len(l12.Ends) != 2 || l12.Ends[0].MTU == 0 || l12.Ends[0].Time == 0 {
		t.Errorf("p1-p2 ends = %+v; want both views with MTU and time", l12.Ends)
	}
	if l01, _ := feedLink(f, name(0), name(1)); len(l01.Ends) != 1 || l01.Ends[0].MTU != 1438 || !l01.Local {
		t.Errorf("p0-p1 = %+v; want our live end with meshsim's MTU 1438", l01)
	} else if e := l01.Ends[0]; e.TxBPS != 2000 || e.RxBPS != 900 || e.RTT != 700 || e.RTTBy != linkstate.RTTProbe {
		t.Errorf("p0-p1 live end = %+v; want the gossiped sleeve bytes/s 2000/900 and probe RTT 700 µs", e)
	}
	// a remote router's sleeve link carries its bytes/s and probe RTT
	if l13, _ := feedLink(f, name(1), name(3)); len(l13.Ends) != 1 ||
		l13.Ends[0].TxBPS != 1500 || l13.Ends[0].RTT != 900 || l13.Ends[0].RTTBy != linkstate.RTTProbe {
		t.Errorf("p1-p3 ends = %+v; want p1's sleeve view with 1500 B/s and probe RTT 900 µs", l13.Ends)
	}
	relayed := 0
	for _, l := range f.Links {
		if l.Kind == httpapi.KindRelayed {
			relayed++
			if l.A != name(0) || l.Via != name(1) {
				t.Errorf("relayed link %+v; want from us via p1", l)
			}
		}
	}
	if relayed != 2 {
		t.Errorf("%d relayed links, want 2 (p2, p3)", relayed)
	}
	if f.IPAM == nil || f.IPAM.Unreachable != 400 || f.IPAM.LocalFree != 590 || len(f.IPAM.Shares) != 2 {
		t.Errorf("ipam = %+v; want 400 unreachable, 590 free here, 2 shares", f.IPAM)
	}
	if f.DNS == nil || len(f.DNS.Entries) != 1 || f.DNS.Entries[0].Name != "web.weave.local." {
		t.Errorf("dns = %+v; want the one live name", f.DNS)
	}
	if len(f.Containers) != 1 || f.Containers[0].Names[0] != "web.weave.local." {
		t.Errorf("containers = %+v; want c0ffee with its DNS name", f.Containers)
	}
	checkLinksText(t, &f, now, name(1)+"(p1) - "+name(2)+"(p2)", [][]string{
		{"sleeve-fallback", "p1", "fastdp", "no", "1376", "420µs", "12.0/0.0", "0/0", "3s"},
		{"sleeve-fallback", "p2", "sleeve", "no", "1438", "-", "0.0/0.0", "0/0", "1s", "fastdp(no", "VXLAN"},
	})
	checkLinksText(t, &f, now, name(0)+"(p0) - "+name(2)+"(p2)", [][]string{{"relayed", "-", "-", "-", "-", "-", "-", "-", "-", "via", name(1) + "(p1)"}})
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(string(b)), "password") || strings.Contains(string(b), "SessionKey") {
		t.Error("the feed mentions a secret")
	}

	// Cut p0-p1: p0 sees its link gone and the others unreachable.
	s.Cut(0, 1)
	s.AwaitConverged(t)
	rep = simReport(s, 0)
	f = httpapi.BuildFeed(&rep, sums, nil, now)
	if _, ok := feedLink(f, name(0), name(1)); ok {
		t.Errorf("p0-p1 still in the feed after the cut: %+v", f.Links)
	}
	for _, p := range f.Peers {
		if !p.Self && p.Reachable {
			t.Errorf("%s reachable from p0 after the cut", p.Nick)
		}
	}
	for _, l := range f.Links {
		for _, e := range l.Ends {
			if e.From != name(0) && !e.Stale {
				t.Errorf("link %s-%s: %s's view not stale though it is unreachable", l.A, l.B, e.From)
			}
		}
	}
}

// awaitTopology waits until peer i's topology lists n peers with every
// connection established both ways.
func awaitTopology(t *testing.T, s *meshsim.Sim, i, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rep := simReport(s, i)
		problem := ""
		if len(rep.Router.Peers) != n {
			problem = fmt.Sprintf("%d peers", len(rep.Router.Peers))
		}
		for _, p := range rep.Router.Peers {
			for _, c := range p.Connections {
				if !c.Established {
					problem = fmt.Sprintf("%s -> %s not established", p.NickName, c.NickName)
				}
			}
		}
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("topology of p%d: %s", i, problem)
		}
		time.Sleep(20 * time.Millisecond) // polling: mesh offers no topology event
	}
}

// TestLocalLinks: our connections and targets as linkstate links.
func TestLocalLinks(t *testing.T) {
	rr := httpapi.RouterReport{Connections: []httpapi.ConnectionReport{
		{Address: "192.168.100.2:6783", Outbound: true, State: "established", Info: "encrypted   sleeve aa:00:00:00:00:02(h2)",
			Attrs: map[string]any{"name": "sleeve", "mtu": 1376, "encrypted": true, "fallback": "fastdp(encrypted)"}},
		{Address: "192.168.100.9:6783", Outbound: true, State: "failed", Info: "dial tcp: connection refused, retry: 2026-01-01"},
	}}
	got := httpapi.LocalLinks(&rr)
	want := []linkstate.Link{
		{Peer: "aa:00:00:00:00:02", Address: "192.168.100.2:6783", State: "established", Overlay: "sleeve", Encrypted: true, MTU: 1376, Fallback: "fastdp(encrypted)"},
		{Address: "192.168.100.9:6783", State: "failed"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("LocalLinks = %+v\nwant %+v", got, want)
	}
}

// checkLinksText: `weave status links` has, for link, lines whose fields
// after the link start with each of want.
func checkLinksText(t *testing.T, f *httpapi.Feed, now time.Time, link string, want [][]string) {
	t.Helper()
	var out bytes.Buffer
	if err := httpapi.WriteLinks(&out, f, now); err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, link+" "); ok {
			got = append(got, strings.Fields(rest))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("status links has %d lines for %s, want %d:\n%s", len(got), link, len(want), out.String())
	}
	for i := range want {
		if len(got[i]) < len(want[i]) || !slices.Equal(got[i][:len(want[i])], want[i]) {
			t.Errorf("status links line %d of %s: %q, want it to start %q", i, link, got[i], want[i])
		}
	}
}

// TestFeedFromGossipedSummaries: p0 - p1 - p2 with a real linkstate
// table on each peer publishing LocalLinks of its own report: p0's feed
// has both ends' views of the remote link p1-p2 without any link of its
// own to p2.
func TestFeedFromGossipedSummaries(t *testing.T) {
	s := meshsim.New(t, 3, meshsim.Options{})
	tables := make([]*linkstate.Table, 3)
	for i, p := range s.Peers {
		tables[i] = linkstate.New(p.Name)
		g, err := p.Mesh.NewGossip(linkstate.ChannelName, tables[i])
		if err != nil {
			t.Fatal(err)
		}
		tables[i].SetGossip(g)
	}
	s.Connect(t, 0, 1)
	s.Connect(t, 1, 2)
	s.AwaitConverged(t)
	awaitTopology(t, s, 0, 3)
	for i := range s.Peers {
		rep := simReport(s, i)
		if !tables[i].SetOwn(linkstate.Summary{NickName: s.Peers[i].NickName, Software: "test", Links: httpapi.LocalLinks(&rep.Router)}) {
			t.Fatalf("p%d did not send its summary", i)
		}
	}
	a, b := s.Peers[1].Name.String(), s.Peers[2].Name.String()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rep := simReport(s, 0)
		f := httpapi.BuildFeed(&rep, tables[0].All(), nil, time.Now())
		l, ok := feedLink(f, a, b)
		if ok && len(l.Ends) == 2 && l.Kind == httpapi.KindSleeve && l.Ends[0].MTU == 1438 && !l.Local {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("p0's view of p1-p2: %+v (found %v)", l, ok)
		}
		select {
		case <-tables[0].Changed():
		case <-time.After(100 * time.Millisecond): // the topology may still be settling
		}
	}
}
