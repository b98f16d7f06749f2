package docker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/docker/go-connections/sockets"
	"github.com/docker/go-plugins-helpers/ipam"
	"github.com/docker/go-plugins-helpers/network"
	"github.com/docker/go-plugins-helpers/sdk"
)

// maxRequest bounds a request body; libnetwork's are a few hundred bytes.
const maxRequest = 1 << 20

// Plugin serves the two sockets. Create with New, then Start; Close stops.
type Plugin struct {
	cfg     Config
	log     *slog.Logger
	nets    *store
	servers []*http.Server
	paths   []string

	mu    sync.Mutex
	given map[netip.Addr]bool // addresses this instance handed to containers (see ReleaseStale)
	// holds counts, under V2, the RequestAddress answers for one container
	// address not yet released: on a swarm the manager allocates it and the
	// node asks for it again, and each releases it.
	holds map[netip.Addr]int
}

// New checks cfg and loads the persisted networks.
func New(cfg Config) (*Plugin, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	nets, err := openStore(cfg.StateFile)
	if err != nil {
		return nil, err
	}
	return &Plugin{cfg: cfg, log: cfg.Logger, nets: nets, given: map[netip.Addr]bool{}, holds: map[netip.Addr]int{}}, nil
}

// Start listens on both sockets, or NetSocket alone under V2 (replacing
// stale socket files a killed router left) and serves them in the
// background.
func (p *Plugin) Start() error {
	socks := []struct {
		path string
		h    http.Handler
	}{
		{p.cfg.NetSocket, p.handler(&netDriver{p: p, name: "weave", scope: network.GlobalScope}, nil)},
		{p.cfg.MeshSocket, p.handler(&netDriver{p: p, name: MeshDriverName, scope: network.LocalScope}, p.ipamDriver())},
	}
	if p.cfg.V2 {
		socks = socks[:1]
		socks[0].h = p.handler(&netDriver{p: p, name: "weave", scope: network.GlobalScope}, p.ipamDriver())
	}
	for _, s := range socks {
		l, err := listenUnix(s.path)
		if err != nil {
			p.Close()
			return err
		}
		srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second}
		p.servers, p.paths = append(p.servers, srv), append(p.paths, s.path)
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				p.log.Error("Docker plugin socket stopped", "path", s.path, "err", err)
			}
		}()
		p.log.Info("Docker plugin listening", "socket", s.path)
	}
	return nil
}

func (p *Plugin) ipamDriver() ipam.Ipam {
	if p.cfg.IPAM == nil {
		return nil
	}
	return &ipamDriver{p: p}
}

// Close stops serving and removes the socket files.
func (p *Plugin) Close() {
	for i, srv := range p.servers {
		_ = srv.Close()
		if err := os.Remove(p.paths[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			p.log.Warn("cannot remove plugin socket", "path", p.paths[i], "err", err)
		}
	}
	p.servers, p.paths = nil, nil
}

// listenUnix listens at path. A socket file nobody answers on (left by a
// killed router) is replaced; a live one, or any other file, is refused.
func listenUnix(path string) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("plugin socket %s: a file that is not a socket is in the way", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("plugin socket %s: another process is serving it (is another weave router running?)", path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("plugin socket %s: probe: %w", path, err)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale plugin socket %s: %w", path, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create directory for plugin socket %s: %w", path, err)
	}
	// go-connections (what the helpers' ServeUnix uses) sets mode 0660
	// before the socket becomes connectable; the owner is us (root).
	l, err := sockets.NewUnixSocketWithOpts(path, sockets.WithChmod(0o660))
	if err != nil {
		return nil, fmt.Errorf("listen on plugin socket %s: %w", path, err)
	}
	return l, nil
}

// handler routes one socket's calls to its drivers (ipd may be nil).
func (p *Plugin) handler(nd network.Driver, ipd ipam.Ipam) http.Handler {
	mux := http.NewServeMux()
	implements := []string{"NetworkDriver"}
	if ipd != nil {
		implements = append(implements, "IpamDriver")
		p.ipamRoutes(mux, ipd)
	}
	mux.HandleFunc("/Plugin.Activate", func(w http.ResponseWriter, _ *http.Request) {
		sdk.EncodeResponse(w, struct{ Implements []string }{implements}, false)
	})
	p.networkRoutes(mux, nd)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, http.StatusNotFound, fmt.Sprintf("unknown call %s (this socket implements %v)", r.URL.Path, implements))
	})
	return mux
}

func (p *Plugin) networkRoutes(mux *http.ServeMux, d network.Driver) {
	noArg(p, mux, "NetworkDriver.GetCapabilities", d.GetCapabilities)
	call(p, mux, "NetworkDriver.CreateNetwork", ack(d.CreateNetwork))
	call(p, mux, "NetworkDriver.AllocateNetwork", d.AllocateNetwork)
	call(p, mux, "NetworkDriver.DeleteNetwork", ack(d.DeleteNetwork))
	call(p, mux, "NetworkDriver.FreeNetwork", ack(d.FreeNetwork))
	call(p, mux, "NetworkDriver.CreateEndpoint", d.CreateEndpoint)
	call(p, mux, "NetworkDriver.DeleteEndpoint", ack(d.DeleteEndpoint))
	call(p, mux, "NetworkDriver.EndpointOperInfo", d.EndpointInfo)
	call(p, mux, "NetworkDriver.Join", d.Join)
	call(p, mux, "NetworkDriver.Leave", ack(d.Leave))
	call(p, mux, "NetworkDriver.DiscoverNew", ack(d.DiscoverNew))
	call(p, mux, "NetworkDriver.DiscoverDelete", ack(d.DiscoverDelete))
	call(p, mux, "NetworkDriver.ProgramExternalConnectivity", ack(d.ProgramExternalConnectivity))
	call(p, mux, "NetworkDriver.RevokeExternalConnectivity", ack(d.RevokeExternalConnectivity))
}

func (p *Plugin) ipamRoutes(mux *http.ServeMux, d ipam.Ipam) {
	noArg(p, mux, "IpamDriver.GetCapabilities", d.GetCapabilities)
	noArg(p, mux, "IpamDriver.GetDefaultAddressSpaces", d.GetDefaultAddressSpaces)
	call(p, mux, "IpamDriver.RequestPool", d.RequestPool)
	call(p, mux, "IpamDriver.ReleasePool", ack(d.ReleasePool))
	call(p, mux, "IpamDriver.RequestAddress", d.RequestAddress)
	call(p, mux, "IpamDriver.ReleaseAddress", ack(d.ReleaseAddress))
}

// empty is the answer of calls that return nothing: {}.
type empty struct{}

// ack adapts a call that returns only an error.
func ack[Req any](f func(*Req) error) func(*Req) (empty, error) {
	return func(r *Req) (empty, error) { return empty{}, f(r) }
}

// call serves one protocol call: decode the JSON request, run f, encode
// its answer, or {"Err": ...} naming the call and what was wrong.
func call[Req, Resp any](p *Plugin, mux *http.ServeMux, name string, f func(*Req) (Resp, error)) {
	mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := decode(r, &req); err != nil {
			p.log.Warn("malformed Docker plugin request", "call", name, "err", err)
			writeErr(w, http.StatusBadRequest, fmt.Sprintf("%s: malformed request: %v", name, err))
			return
		}
		resp, err := f(&req)
		p.answer(w, name, resp, err)
	})
}

// noArg serves a call whose request carries nothing.
func noArg[Resp any](p *Plugin, mux *http.ServeMux, name string, f func() (Resp, error)) {
	mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxRequest))
		resp, err := f()
		p.answer(w, name, resp, err)
	})
}

func (p *Plugin) answer(w http.ResponseWriter, name string, resp any, err error) {
	if err == nil {
		p.log.Debug("Docker plugin call", "call", name)
		sdk.EncodeResponse(w, resp, false)
		return
	}
	code := http.StatusInternalServerError
	if errors.Is(err, errBadRequest) {
		code = http.StatusBadRequest
	}
	p.log.Warn("Docker plugin call failed", "call", name, "err", err)
	writeErr(w, code, err.Error())
}

// decode reads one JSON object; an empty body or trailing data is malformed.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(body) > maxRequest {
		return fmt.Errorf("body larger than %d bytes", maxRequest)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("empty body")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON object")
	}
	return nil
}

// writeErr answers in libnetwork's error shape.
func writeErr(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", sdk.DefaultContentTypeV1_1)
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(network.NewErrorResponse(msg))
}
