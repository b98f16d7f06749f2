package httpapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// The status page: one self-contained page (HTML, script, style and icon
// embedded in the binary, nothing fetched from anywhere else) served on
// --status-addr next to the read-only API. It only reads: every route
// of the page answers 405 to anything but GET and HEAD.

//go:embed ui
var uiFiles embed.FS

// PageCSP is the page's Content-Security-Policy: its own script, style,
// icon and feed only; no inline code, no frames, no forms, no base.
const PageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// PageConfig configures the page.
type PageConfig struct {
	Source PageSource
	Logger *slog.Logger
	// Poll is how often a live client's feed is rebuilt and compared;
	// default 500 ms, so a change reaches the page within a second.
	Poll time.Duration
	// MaxClients bounds concurrent /ui/events streams; default 16.
	MaxClients int
}

type page struct {
	cfg     PageConfig
	clients chan struct{}
}

// PagePaths are the page's routes, all GET/HEAD only.
var PagePaths = []string{"/", "/ui/app.js", "/ui/app.css", "/ui/icon.svg", "/ui/feed", "/ui/events"}

// WithPage serves the status page in front of api (the read-only API
// handler): "/" and "/ui/..." are the page's, everything else is api's.
func WithPage(api http.Handler, cfg PageConfig) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = 16
	}
	p := &page{cfg: cfg, clients: make(chan struct{}, cfg.MaxClients)}
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", p.only(p.static("ui/index.html", "text/html; charset=utf-8")))
	mux.HandleFunc("/ui/app.js", p.only(p.static("ui/app.js", "text/javascript; charset=utf-8")))
	mux.HandleFunc("/ui/app.css", p.only(p.static("ui/app.css", "text/css; charset=utf-8")))
	mux.HandleFunc("/ui/icon.svg", p.only(p.static("ui/icon.svg", "image/svg+xml")))
	mux.HandleFunc("/ui/feed", p.only(p.feed))
	mux.HandleFunc("/ui/events", p.only(p.events))
	mux.HandleFunc("/ui/", p.only(http.NotFound))
	mux.Handle("/", api)
	return recoverMiddleware(cfg.Logger, mux)
}

// only sets the page's security headers and refuses every method but
// GET and HEAD.
func (p *page) only(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", PageCSP)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			hd.Set("Allow", "GET, HEAD")
			writeText(w, http.StatusMethodNotAllowed, "the status page is read-only\n")
			return
		}
		h(w, r)
	}
}

func (p *page) static(name, ctype string) http.HandlerFunc {
	body, err := uiFiles.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("httpapi: embedded %s missing: %v", name, err)) // a build error, not a runtime one
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(body)
	}
}

func (p *page) build() ([]byte, error) {
	rep := p.cfg.Source.Report()
	if !rep.Ready {
		return nil, nil
	}
	f := BuildFeed(&rep, p.cfg.Source.LinkSummaries(), p.cfg.Source.Containers(), time.Now())
	return json.Marshal(&f)
}

func (p *page) feed(w http.ResponseWriter, r *http.Request) {
	b, err := p.build()
	switch {
	case err != nil:
		writeText(w, http.StatusInternalServerError, "encode feed: "+oneLine(err.Error())+"\n")
		return
	case b == nil:
		writeText(w, http.StatusServiceUnavailable, "weave router is starting\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

// keepAlive is how often an idle event stream gets a comment line, so
// proxies and the browser keep it open.
const keepAlive = 15 * time.Second

// events streams the feed as server-sent events: one "feed" event at
// once, then one whenever the feed changes (checked every Poll).
func (p *page) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeText(w, http.StatusInternalServerError, "streaming unsupported\n")
		return
	}
	select {
	case p.clients <- struct{}{}:
		defer func() { <-p.clients }()
	default:
		writeText(w, http.StatusServiceUnavailable, fmt.Sprintf("too many live pages (%d); close one or use /ui/feed\n", p.cfg.MaxClients))
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no") // a reverse proxy must not hold the events back
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	if r.Method == http.MethodHead {
		return
	}
	tick := time.NewTicker(p.cfg.Poll)
	defer tick.Stop()
	var last []byte
	lastWrite := time.Now()
	for {
		b, err := p.build()
		if err != nil {
			p.cfg.Logger.Error("build status page feed", "err", err)
			return
		}
		var msg string
		switch {
		case b != nil && !bytes.Equal(b, last):
			msg = "event: feed\ndata: " + string(b) + "\n\n"
			last = b
		case time.Since(lastWrite) >= keepAlive:
			msg = ": keep-alive\n\n"
		}
		if msg != "" {
			if _, err := strings.NewReader(msg).WriteTo(w); err != nil {
				return
			}
			fl.Flush()
			lastWrite = time.Now()
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}
