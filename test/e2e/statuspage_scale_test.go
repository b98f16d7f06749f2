package e2e

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/linkstate"
	"github.com/seedf75a49c6/weave/prog/weaver/httpapi"
	"github.com/seedf75a49c6/weave/test/meshsim"
	wmesh "github.com/weaveworks/mesh"
)

// pageSource serves a fixed report and summaries to the page (and, as a
// Backend, refuses every write: the page never makes one).
type pageSource struct {
	rep  httpapi.Report
	sums map[string]linkstate.Summary
}

func (s *pageSource) Report() httpapi.Report                      { return s.rep }
func (s *pageSource) LinkSummaries() map[string]linkstate.Summary { return s.sums }
func (s *pageSource) Containers() map[string][]string {
	return map[string][]string{"3f2a9c": {"10.32.0.7/12"}}
}

var errReadOnly = errors.New("read-only test source")

func (s *pageSource) Connect([]string, bool) []error  { return []error{errReadOnly} }
func (s *pageSource) Forget([]string) error           { return errReadOnly }
func (s *pageSource) Expose(netip.Prefix, bool) error { return errReadOnly }
func (s *pageSource) serve(t *testing.T) string {
	t.Helper()
	h := httpapi.WithPage(httpapi.NewAPIHandler(httpapi.APIConfig{Backend: s, ReadOnly: true}), httpapi.PageConfig{Source: s})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// summariesFor makes link summaries for every other peer of rep's
// topology (the rest are 2.8.1 peers): fastdp, with every seventh link on
// sleeve after a fastdp fallback.
func summariesFor(rep *httpapi.Report) map[string]linkstate.Summary {
	sums := map[string]linkstate.Summary{}
	for i, p := range rep.Router.Peers {
		if i%2 == 1 {
			continue
		}
		s := linkstate.Summary{Peer: p.Name, NickName: p.NickName, Software: "3.0.0", Version: 1, Time: time.Now().Unix()}
		for j, c := range p.Connections {
			l := linkstate.Link{Peer: c.Name, State: "established", Overlay: "fastdp", MTU: 1376, TxFPS: float64(10 * j), RxFPS: float64(7 * j)}
			if (i+j)%7 == 0 {
				l.Overlay, l.MTU, l.Fallback = "sleeve", 1438, "fastdp(no VXLAN heartbeat ack for 3s: UDP 6784 blocked or peer unreachable)"
			}
			s.Links = append(s.Links, l)
		}
		sums[p.Name] = s
	}
	return sums
}

// syntheticReport is peer 0's report of an n-peer mesh where peer i links
// to i+1 and i+5 (a ring with chords), every route first hop a
// neighbour; every 25th peer is suspect and every 40th dead.
func syntheticReport(n int) httpapi.Report {
	name := func(i int) string { return wmesh.PeerName(0xaa0000000000 + uint64(i%n) + 1).String() }
	nick := func(i int) string { return fmt.Sprintf("p%d", i%n) }
	rr := httpapi.RouterReport{Name: name(0), NickName: nick(0), Liveness: map[string]httpapi.PeerLiveness{}}
	since := time.Now().Add(-5 * time.Minute)
	for i := range n {
		p := httpapi.PeerReport{Name: name(i), NickName: nick(i)}
		for _, d := range []int{1, 5, n - 1, n - 5} {
			p.Connections = append(p.Connections, httpapi.PeerConnection{Name: name(i + d), NickName: nick(i + d),
				Address: fmt.Sprintf("192.168.%d.%d:6783", (i+d)%n/250, (i+d)%n%250+1), Outbound: d < n/2, Established: true})
		}
		rr.Peers = append(rr.Peers, p)
		state := "alive"
		switch {
		case i > 0 && i%40 == 0:
			state = "dead"
		case i > 0 && i%25 == 0:
			state = "suspect"
		}
		rr.Liveness[name(i)] = httpapi.PeerLiveness{NickName: nick(i), State: state, Since: since}
		if i > 0 {
			rr.UnicastRoutes = append(rr.UnicastRoutes, httpapi.UnicastRoute{Dest: name(i), Via: name(1)})
		}
	}
	return httpapi.Report{Ready: true, Version: "3.0.0", Router: rr}
}

// TestStatusPageScale: the page at 50 simulated peers (a real meshsim
// mesh) and 200 (a synthetic report) in Chromium: every peer is drawn
// (50, graph) or listed (200, table by default), the filter narrows the
// list to one peer and picking it shows its details, with no console
// error and no request elsewhere; the render times at 50 and 200 peers
// (graph and table) are logged, and screenshots saved.
func TestStatusPageScale(t *testing.T) {
	chromiumPath(t)
	s := meshsim.New(t, 50, meshsim.Options{GossipInterval: time.Second, Timeout: 60 * time.Second})
	for i := range 50 {
		s.Connect(t, i, (i+1)%50)
		if i%5 == 0 {
			s.Connect(t, i, (i+17)%50)
		}
	}
	s.AwaitConverged(t)
	rep := httpapi.Report{Ready: true, Version: "3.0.0", Router: httpapi.RouterReportFromMesh(wmesh.NewStatus(s.Peers[0].Mesh))}
	if len(rep.Router.Peers) != 50 {
		t.Fatalf("peer 0 knows %d peers, want 50", len(rep.Router.Peers))
	}
	src50 := &pageSource{rep: rep, sums: summariesFor(&rep)}
	origin50 := src50.serve(t)
	b := newBrowser(t)
	b.open(origin50 + "/")
	b.await("50 peers drawn", `document.querySelectorAll('#graph g.peer').length === 50`, 10*time.Second)
	b.await("every peer link drawn", `document.querySelectorAll('#graph line.link').length === document.querySelectorAll('#link-table tbody tr[data-kind]:not([data-kind="relayed"])').length + document.querySelectorAll('#graph line.link.kind-relayed').length`, 5*time.Second)
	b.await("fallback links drawn", `document.querySelectorAll('#graph line.link.kind-sleeve-fallback').length > 0`, 5*time.Second)
	r := b.rerender(5)
	t.Logf("render time, %d peers %d links (%s view): median %.1f ms with layout (script alone %.1f ms)", r.Peers, r.Links, r.View, r.Ms, r.ScriptMs)
	b.screenshot("4-meshsim-50-peers")
	b.checkClean(origin50)

	src200 := &pageSource{rep: syntheticReport(200)}
	src200.sums = summariesFor(&src200.rep)
	origin200 := src200.serve(t)
	b2 := newBrowser(t)
	b2.open(origin200 + "/")
	b2.await("200 peers listed", `document.querySelectorAll('#peer-table tbody tr').length === 200`, 10*time.Second)
	r = b2.rerender(5)
	t.Logf("render time, %d peers %d links (%s view): median %.1f ms with layout (script alone %.1f ms)", r.Peers, r.Links, r.View, r.Ms, r.ScriptMs)
	b2.js(`document.getElementById("view-graph").click()`)
	b2.await("200 peers drawn", `document.querySelectorAll('#graph g.peer').length === 200`, 10*time.Second)
	r = b2.rerender(5)
	t.Logf("render time, %d peers %d links (%s view): median %.1f ms with layout (script alone %.1f ms)", r.Peers, r.Links, r.View, r.Ms, r.ScriptMs)
	b2.screenshot("5-synthetic-200-peers-graph")
	b2.js(`document.getElementById("view-table").click()`)
	b2.js(`(() => { const f = document.getElementById("filter"); f.value = "p199"; f.dispatchEvent(new Event("input")); })()`)
	b2.await("the filter leaves p199", `document.querySelectorAll('#peer-table tbody tr').length === 1 && document.querySelector('#peer-table tbody tr td:nth-child(2)').textContent === "p199"`, 5*time.Second)
	b2.js(`document.querySelector('#peer-table tbody tr').click()`)
	b2.await("p199's details", `/p199/.test(document.querySelector('#detail-body h3').textContent)`, 5*time.Second)
	b2.screenshot("6-synthetic-200-peers-filtered")
	b2.checkClean(origin200)
}
