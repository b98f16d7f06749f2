package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seedf75a49c6/weave/linkstate"
)

// GET /status/links (`weave status links`) is ours, not 2.8.1's: every
// link of the mesh, each end's own view of it (data path, encryption,
// MTU, traffic, fallback reason) from the summaries our routers gossip.
// 2.8.1's status texts are unchanged.

func (a *api) statusLinks(w http.ResponseWriter, r *http.Request) {
	rep, ok := a.readyReport(w)
	if !ok {
		return
	}
	var sums map[string]linkstate.Summary
	if ps, ok := a.cfg.Backend.(interface {
		LinkSummaries() map[string]linkstate.Summary
	}); ok {
		sums = ps.LinkSummaries()
	}
	f := BuildFeed(&rep, sums, nil, time.Now())
	var b bytes.Buffer
	_ = WriteLinks(&b, &f, time.Now())
	writeText(w, http.StatusOK, b.String())
}

// WriteLinks writes the links of a feed as a table: one line per end's
// view (a link no end reports on, or a relayed peer, gets one line).
func WriteLinks(w io.Writer, f *Feed, now time.Time) error {
	nick := map[string]string{}
	for _, p := range f.Peers {
		nick[p.Name] = p.Nick
	}
	peer := func(name string) string {
		if name == "" {
			return "?"
		}
		return name + "(" + nick[name] + ")"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LINK\tKIND\tVIEW FROM\tDATA PATH\tENCRYPTED\tMTU\tRTT\tTX/RX FRAMES/S\tTX/RX BYTES/S\tAGE\tFALLBACK/INFO")
	for _, l := range f.Links {
		other := peer(l.B)
		if l.B == "" {
			other = l.Addr
		}
		link := peer(l.A) + " - " + other
		if len(l.Ends) == 0 {
			info := l.Info
			if l.Via != "" {
				info = "via " + peer(l.Via)
			}
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", link, l.Kind, oneLine(info))
			continue
		}
		for _, e := range l.Ends {
			from := nick[e.From]
			if e.Stale {
				from += " (stale)"
			}
			enc := "no"
			if e.Encrypted {
				enc = "yes"
			}
			path := e.Overlay
			if path == "" {
				path = "none"
			}
			age := "-"
			if e.Time > 0 {
				age = (time.Duration(max(0, now.Unix()-e.Time)) * time.Second).String()
			}
			rtt := "-"
			if e.RTT > 0 {
				rtt = (time.Duration(e.RTT) * time.Microsecond).String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%.1f/%.1f\t%.0f/%.0f\t%s\t%s\n", link, l.Kind, from, path, enc, e.MTU,
				rtt, e.TxFPS, e.RxFPS, e.TxBPS, e.RxBPS, age, oneLine(strings.TrimSpace(e.Fallback+" "+stateNote(e.State))))
		}
	}
	return tw.Flush()
}

// stateNote names a connection state other than established.
func stateNote(s string) string {
	if s == "established" || s == "" {
		return ""
	}
	return "(" + s + ")"
}
