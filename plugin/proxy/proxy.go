package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

// Engine is the part of the Docker client the proxy uses;
// *client.Client implements it.
type Engine interface {
	ContainerInspect(ctx context.Context, id string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ImageInspect(ctx context.Context, image string, options ...client.ImageInspectOption) (client.ImageInspectResult, error)
	Events(ctx context.Context, options client.EventsListOptions) client.EventsResult
}

// Proxy is a running Docker API proxy.
type Proxy struct {
	cfg      Config
	hostRe   *regexp.Regexp
	log      *slog.Logger
	engine   Engine
	closeEng func() error
	upstream *httputil.ReverseProxy
	dial     func(ctx context.Context) (net.Conn, error)
	servers  []*http.Server
	addrs    []string

	mu    sync.Mutex
	locks map[string]*sync.Mutex // per container: attach and release never interleave
	conns map[net.Conn]bool      // hijacked connections, closed by Close

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// API paths the proxy acts on, with or without a /v1.xx prefix.
var (
	createPath    = regexp.MustCompile(`^(?:/v[0-9][0-9.]*)?/containers/create$`)
	containerPath = regexp.MustCompile(`^(?:/v[0-9][0-9.]*)?/containers/([^/]+)/(start|restart|json|attach)$`)
	execStartPath = regexp.MustCompile(`^(?:/v[0-9][0-9.]*)?/exec/[^/]+/start$`)
)

// New checks cfg and builds the proxy; Start listens.
func New(cfg Config) (*Proxy, error) {
	re, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, hostRe: re, log: cfg.Logger.With("component", "proxy"),
		locks: map[string]*sync.Mutex{}, conns: map[net.Conn]bool{}}
	network, addr, err := ParseAddr(cfg.DockerAPI)
	if err != nil {
		return nil, fmt.Errorf("--docker-api: %w", err)
	}
	p.dial = func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	p.engine = cfg.Engine
	if p.engine == nil {
		cl, err := client.New(client.WithHost(cfg.DockerAPI), client.WithAPIVersionNegotiation())
		if err != nil {
			return nil, fmt.Errorf("Docker client for %s: %w", cfg.DockerAPI, err)
		}
		p.engine, p.closeEng = cl, cl.Close
	}
	host := "docker"
	if network == "tcp" {
		host = addr
	}
	p.upstream = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host, r.Out.Host = "http", host, host
		},
		Transport: &http.Transport{
			DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return p.dial(ctx) },
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		},
		FlushInterval:  -1, // streams (logs -f, events, stats, pull progress) as they come
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.upstreamError,
	}
	return p, nil
}

// Addrs are the addresses the proxy listens on (GET /proxyaddrs).
func (p *Proxy) Addrs() []string { return p.addrs }

// Start listens on every address, then follows Docker's events: from
// then on containers created through it are attached when they start.
func (p *Proxy) Start(ctx context.Context) error {
	for _, a := range p.cfg.Listen {
		l, err := p.listen(a)
		if err != nil {
			p.Close()
			return err
		}
		srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)}
		p.servers = append(p.servers, srv)
		p.addrs = append(p.addrs, a)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				p.log.Error("Docker API proxy listener stopped", "addr", a, "err", err)
			}
		}()
		p.log.Info("Docker API proxy listening", "addr", a, "docker", p.cfg.DockerAPI)
	}
	ctx, p.cancel = context.WithCancel(ctx)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.watch(ctx)
	}()
	return nil
}

// listen opens one -H address. A unix socket file nobody answers on (a
// killed router's) is replaced; a live one is refused.
func (p *Proxy) listen(a string) (net.Listener, error) {
	network, addr, err := ParseAddr(a)
	if err != nil {
		return nil, err
	}
	if network == "tcp" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("Docker API proxy: listen on %s: %w", a, err)
		}
		if p.cfg.TLS != nil {
			l = newTLSListener(l, p.cfg.TLS)
		}
		return l, nil
	}
	if err := os.MkdirAll(filepath.Dir(addr), 0o755); err != nil {
		return nil, fmt.Errorf("Docker API proxy: %w", err)
	}
	if st, err := os.Lstat(addr); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("Docker API proxy: %s exists and is not a socket; not replacing it", addr)
		}
		if c, err := net.DialTimeout("unix", addr, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("Docker API proxy: %s is served by another process", addr)
		}
		_ = os.Remove(addr)
	}
	old := syscall.Umask(0o117) // 0660 from the start, as dockerd's socket
	l, err := net.Listen("unix", addr)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("Docker API proxy: listen on %s: %w", a, err)
	}
	p.shareGroup(addr)
	return l, nil
}

// shareGroup gives the socket the group of Docker's own, so whoever may
// use Docker may use the proxy.
func (p *Proxy) shareGroup(path string) {
	network, addr, _ := ParseAddr(p.cfg.DockerAPI)
	if network != "unix" {
		return
	}
	if st, err := os.Stat(addr); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			_ = os.Chown(path, -1, int(sys.Gid))
		}
	}
}

// Close stops the listeners, the event watch and hijacked streams.
func (p *Proxy) Close() {
	if p.cancel != nil {
		p.cancel()
	}
	for i, srv := range p.servers {
		_ = srv.Close()
		if network, addr, _ := ParseAddr(p.addrs[i]); network == "unix" {
			_ = os.Remove(addr)
		}
	}
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if p.closeEng != nil {
		_ = p.closeEng()
	}
}

// ServeHTTP routes: create is rewritten, attach/exec streams and upgrades
// are spliced, everything else goes through the reverse proxy (whose
// ModifyResponse acts on start, restart and inspect).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && createPath.MatchString(path):
		p.create(w, r)
	case r.Header.Get("Upgrade") != "" || r.Method == http.MethodPost && (execStartPath.MatchString(path) || isAttach(path)):
		p.splice(w, r)
	default:
		p.upstream.ServeHTTP(w, r)
	}
}

func isAttach(path string) bool {
	m := containerPath.FindStringSubmatch(path)
	return m != nil && m[2] == "attach"
}

// upstreamError answers in Docker's error shape when dockerd is away.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	var ae *attachError
	if errors.As(err, &ae) {
		writeError(w, http.StatusInternalServerError, ae.Error())
		return
	}
	p.log.Warn("Docker API call failed", "method", r.Method, "path", r.URL.Path, "err", err)
	writeError(w, http.StatusBadGateway, fmt.Sprintf("weave proxy: Docker API %s: %v", p.cfg.DockerAPI, err))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, "{\"message\":%q}\n", msg)
}

// modifyResponse attaches a started or restarted container before the
// client hears of the start, and rewrites inspect under --rewrite-inspect.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	r := resp.Request
	m := containerPath.FindStringSubmatch(r.URL.Path)
	if m == nil || resp.StatusCode/100 != 2 {
		return nil
	}
	id, _ := url.PathUnescape(m[1])
	switch {
	case r.Method == http.MethodPost && (m[2] == "start" || m[2] == "restart"):
		if err := p.attach(r.Context(), id); err != nil {
			p.log.Warn("cannot attach container", "container", id, "err", err)
			return &attachError{id: id, err: err}
		}
	case r.Method == http.MethodGet && m[2] == "json" && p.cfg.RewriteInspect:
		return p.rewriteInspect(resp)
	}
	return nil
}

// attachError is a start whose container could not be attached: the
// client gets a 500 naming it (the container waits in /w/w).
type attachError struct {
	id  string
	err error
}

func (e *attachError) Error() string {
	return fmt.Sprintf("weave proxy: container %s started but could not be attached to weave: %v", shortID(e.id), e.err)
}

func (p *Proxy) lock(id string) func() {
	p.mu.Lock()
	l, ok := p.locks[id]
	if !ok {
		l = &sync.Mutex{}
		p.locks[id] = l
	}
	p.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// forgetLock drops a destroyed container's lock.
func (p *Proxy) forgetLock(id string) {
	p.mu.Lock()
	delete(p.locks, id)
	p.mu.Unlock()
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return strings.TrimPrefix(id, "/")
}
