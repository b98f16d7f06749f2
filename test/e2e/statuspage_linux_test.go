package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// statusAddr is where the routers of these tests serve the status page
// (inside each host namespace).
const statusAddr = "127.0.0.1:6782"

// pageLatency is the bound: a change the router knows is on the
// page within 2 s.
const pageLatency = 2 * time.Second

func linkSel(a, b int) string {
	x, y := peerName(min(a, b)), peerName(max(a, b))
	return fmt.Sprintf(`#link-table tr[data-link="%s|%s"]`, x, y)
}

// linkIs is a JavaScript test: the link table row of a-b has kind and,
// in the graph, the line too.
func linkIs(a, b int, kind string) string {
	x, y := peerName(min(a, b)), peerName(max(a, b))
	return fmt.Sprintf(`(() => { const r = document.querySelector('%s'); const l = document.querySelector('#graph line.link[data-link="%s|%s"]');
		return !!r && r.dataset.kind === %q && !!l && l.dataset.kind === %q; })()`, linkSel(a, b), x, y, kind, kind)
}

func peerLiveness(i int, state string) string {
	return fmt.Sprintf(`(() => { const p = document.querySelector('#graph g.peer[data-peer="%s"]'); return !!p && p.dataset.liveness === %q; })()`, peerName(i), state)
}

// TestStatusPageInBrowser: three real routers (fastdp) in namespace
// hosts; h1's status page in Chromium. It loads with no console error
// and requests nothing but the router; it shows every peer and every
// link on fastdp, the remote h2-h3 link included (from the gossiped
// summaries); when UDP 6784 into h2 is blocked, h1-h2 is drawn as sleeve
// with a fallback within 2 s of h1's status saying so, and h2-h3 too;
// unblocked, both come back to fastdp; the underlay between h1 and h3
// cut, h1-h3 is drawn as sleeve with fallback, and fastdp after the heal;
// a target nobody answers is drawn failed; a SIGKILLed h3 turns dead
// within 2 s of h1's liveness saying so. Each "within 2 s" is measured
// from h1's own status showing the change. Screenshots go to the test's artifact
// directory (go test -artifacts keeps them).
func TestStatusPageInBrowser(t *testing.T) {
	chromiumPath(t)
	cl := newFastCluster(t, clusterOpts{hosts: 3, extra: []string{"--status-addr", statusAddr, "--ipalloc-range", "10.2.0.0/16"}})
	for _, p := range [][2]int{{1, 2}, {1, 3}, {2, 3}} {
		cl.waitLink(p[0], p[1], "on vxlan", onVXLAN)
		cl.waitLink(p[1], p[0], "on vxlan", onVXLAN)
	}
	origin := proxyToNS(t, cl.host(1).NS, statusAddr)
	checkPageOnlyOnStatusAddr(t, cl, origin)
	b := newBrowser(t)
	start := time.Now()
	b.open(origin + "/")
	t.Logf("page loaded and rendered in %v", time.Since(start).Round(time.Millisecond))
	b.await("3 peers drawn", `document.querySelectorAll('#graph g.peer').length === 3`, 10*time.Second)
	for _, p := range [][2]int{{1, 2}, {1, 3}, {2, 3}} {
		b.await(fmt.Sprintf("h%d-h%d drawn as fastdp", p[0], p[1]), linkIs(p[0], p[1], "fastdp"), 15*time.Second)
	}
	b.await("h1 alive in the picture", peerLiveness(2, "alive"), livenessTimeout)
	selfText, err := eval[string](b, `document.getElementById("self").textContent`)
	if err != nil || !strings.Contains(selfText, "h1") {
		t.Fatalf("header says %q (%v), want h1", selfText, err)
	}
	r := b.rerender(5)
	t.Logf("render time, %d peers %d links (%s view): median %.1f ms with layout (script alone %.1f ms)", r.Peers, r.Links, r.View, r.Ms, r.ScriptMs)
	b.js(clickPeer(2))
	b.await("h2's details", fmt.Sprintf(`!!document.querySelector('#detail-body h3[data-detail="%s"]')`, peerName(2)), 5*time.Second)
	b.screenshot("1-healthy-3-peers")
	checkStatusLinks(t, cl, 2, 3, "fastdp")

	cl.blockVXLAN(2, true)
	cl.waitLink(1, 2, "falls back to sleeve", func(st linkState) bool { return st.overlay == "sleeve" && st.fallback != "" })
	d := b.await("h1-h2 drawn as sleeve with fallback", linkIs(1, 2, "sleeve-fallback"), pageLatency)
	t.Logf("h1-h2 fallback on the page %v after h1's status showed it", d.Round(time.Millisecond))
	d = b.await("remote h2-h3 drawn as sleeve with fallback", linkIs(2, 3, "sleeve-fallback"), 30*time.Second)
	t.Logf("remote h2-h3 fallback on h1's page after %v more", d.Round(time.Millisecond))
	why, err := eval[string](b, `document.querySelector('`+linkSel(1, 2)+`').textContent`)
	if err != nil || !strings.Contains(why, "fastdp(") {
		t.Errorf("h1-h2 row %q (%v), want the fallback reason", why, err)
	}
	// sleeve has no round trip of its own: the row shows the liveness
	// probe's, labelled so (the summaries are rebuilt every 500 ms)
	b.await("h1-h2 row shows the probe RTT", `document.querySelector('`+linkSel(1, 2)+`').textContent.includes("(probe)")`, 10*time.Second)
	b.screenshot("2-vxlan-blocked-into-h2")
	checkStatusLinks(t, cl, 2, 3, "sleeve-fallback")

	cl.blockVXLAN(2, false)
	cl.waitLink(1, 2, "back on vxlan", onVXLAN)
	d = b.await("h1-h2 back to fastdp", linkIs(1, 2, "fastdp"), pageLatency)
	t.Logf("h1-h2 back on fastdp on the page %v after h1's status", d.Round(time.Millisecond))
	b.await("h2-h3 back to fastdp", linkIs(2, 3, "fastdp"), 30*time.Second)

	// A real cut of the underlay between h1 and h3: fastdp notices
	// first (sleeve's heartbeat timeout is 60 s), so the link is drawn as
	// sleeve with the fallback reason; back after the heal.
	cl.tp.CutLink(cl.host(1), cl.host(3))
	cl.waitLink(1, 3, "falls back to sleeve after the cut", func(st linkState) bool { return st.overlay == "sleeve" && st.fallback != "" })
	d = b.await("cut h1-h3 drawn as sleeve with fallback", linkIs(1, 3, "sleeve-fallback"), pageLatency)
	t.Logf("cut h1-h3 on the page %v after h1's status", d.Round(time.Millisecond))
	b.screenshot("3-h1-h3-cut")
	cl.tp.RestoreLink(cl.host(1), cl.host(3))
	cl.waitLink(1, 3, "back on vxlan after the heal", onVXLAN)
	d = b.await("healed h1-h3 back to fastdp", linkIs(1, 3, "fastdp"), pageLatency)
	t.Logf("healed h1-h3 on the page %v after h1's status", d.Round(time.Millisecond))

	// A target nobody answers: drawn as a failed (or retrying) link.
	cl.weave(1, "connect", "192.168.100.99")
	target := fmt.Sprintf(`#link-table tr[data-link="%s|@192.168.100.99:6783"]`, peerName(1))
	netnstest.WaitFor(t, establishTimeout, "h1's target 192.168.100.99 not connecting", func() error {
		conns, out, err := cl.connections(1)
		if err != nil {
			return err
		}
		for _, c := range conns {
			if c.Addr == "192.168.100.99:6783" && (c.State == "failed" || c.State == "retrying") {
				return nil
			}
		}
		return fmt.Errorf("no failed target in:\n%s", out)
	})
	d = b.await("the unanswered target drawn failed", fmt.Sprintf(`(() => { const r = document.querySelector('%s'); return !!r && r.dataset.kind === "failed"; })()`, target), pageLatency)
	t.Logf("failed target on the page %v after h1's status", d.Round(time.Millisecond))
	cl.weave(1, "forget", "192.168.100.99")

	(&ipamCluster{t: t, tp: cl.tp}).kill9(3)
	netnstest.WaitFor(t, livenessTimeout, "h1 holds h3 dead", func() error {
		return wantLiveness(origin, peerName(3), "dead")
	})
	d = b.await("h3 drawn dead", peerLiveness(3, "dead"), pageLatency)
	t.Logf("h3 dead on the page %v after h1's report", d.Round(time.Millisecond))
	b.await("a dead chip", `!!document.querySelector('#counts [data-count="dead"]')`, pageLatency)
	b.screenshot("4-h3-killed")
	b.checkClean(origin)
}

// wantLiveness checks the router's own /report (behind origin).
func wantLiveness(origin, peer, state string) error {
	req, _ := http.NewRequest("GET", origin+"/report", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var rep livenessReport
	if err := json.Unmarshal(body, &rep); err != nil {
		return fmt.Errorf("decode /report: %w", err)
	}
	if got := rep.Router.Liveness[peer].State; got != state {
		return fmt.Errorf("%s is %q", peer, got)
	}
	return nil
}

// clickPeer picks peer i in the graph as a click does.
func clickPeer(i int) string {
	return fmt.Sprintf(`document.querySelector('#graph g.peer[data-peer="%s"]').dispatchEvent(new MouseEvent("click", {bubbles: true}))`, peerName(i))
}

// checkStatusLinks: `weave status links` on h1 shows the remote link
// a-b of kind, from both ends' views.
func checkStatusLinks(t *testing.T, cl *cluster, a, b int, kind string) {
	t.Helper()
	out := cl.weave(1, "status", "links")
	prefix := fmt.Sprintf("%s(h%d) - %s(h%d) ", peerName(a), a, peerName(b), b)
	views := 0
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			f := strings.Fields(rest)
			if len(f) < 6 || f[0] != kind {
				t.Errorf("weave status links: %q, want kind %s", line, kind)
			} else if kind == "fastdp" && f[5] == "-" {
				t.Errorf("weave status links: %q, want the heartbeat RTT of a fastdp link", line)
			} else if f[2] == "sleeve" && f[5] == "-" {
				t.Errorf("weave status links: %q, want the liveness probe RTT of a view on sleeve", line)
			}
			views++
		}
	}
	t.Logf("weave status links on h1:\n%s", out)
	if views != 2 {
		t.Errorf("weave status links on h1 has %d views of h%d-h%d, want 2:\n%s", views, a, b, out)
	}
}

// checkPageOnlyOnStatusAddr: the real router serves the page on its
// status address only, and refuses writes there.
func checkPageOnlyOnStatusAddr(t *testing.T, cl *cluster, origin string) {
	t.Helper()
	rw := &ipamCluster{t: t, tp: cl.tp}
	for _, path := range []string{"/", "/ui/feed", "/ui/events", "/ui/app.js"} {
		if code, _, err := rw.routerGET(1, path); err != nil || code != http.StatusNotFound {
			t.Errorf("GET %s on the read-write API = %d (%v), want 404", path, code, err)
		}
		resp, err := http.Post(origin+path, "application/x-www-form-urlencoded", strings.NewReader("peer=10.9.9.9"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s on the status address = %d, want 405", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"/connect", "/forget", "/expose/10.9.9.9/24", "/ip/x"} {
		resp, err := http.Post(origin+path, "application/x-www-form-urlencoded", strings.NewReader("peer=10.9.9.9"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("POST %s on the status address = %d, want a refusal", path, resp.StatusCode)
		}
	}
}
