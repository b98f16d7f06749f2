package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"strings"
	"text/template"
)

// Backend is what the HTTP API needs from the running daemon.
type Backend interface {
	// Report returns a fresh snapshot of the daemon's state.
	Report() Report
	// Connect adds connection targets (host[:port]); replace drops the
	// current ones first. It returns one error per unusable peer.
	Connect(peers []string, replace bool) []error
	// Forget removes connection targets.
	Forget(peers []string) error
	// Expose adds addr to the bridge and, unless skipNAT, masquerades
	// traffic from it.
	Expose(addr netip.Prefix, skipNAT bool) error
}

// APIConfig configures the HTTP API handler.
type APIConfig struct {
	Backend  Backend
	Logger   *slog.Logger
	ReadOnly bool   // serve only /status*, /report and /metrics (--status-addr)
	IPAM     string // IPAM range ("" = IPAM off)
	// IPAMDefaultSubnet is shown in the status text; default IPAM.
	IPAMDefaultSubnet string
	// IPAMHandler serves the allocator's routes (/ip..., /ipinfo/..., /ring,
	// DELETE /peer[/{id}], GET /status/ipam); nil while IPAM does not run.
	IPAMHandler http.Handler
	// DNSHandler serves weaveDNS's routes (/name..., /domain,
	// /dns-address[-port], GET /status/dns); nil with --no-dns.
	DNSHandler http.Handler
	// PProf (--pprof) serves net/http/pprof under /debug/pprof/ on the
	// full API. 2.8.1 served it always, as a side effect of the default
	// ServeMux; a profiling endpoint stays off unless asked for.
	PProf bool
}

type api struct {
	cfg APIConfig
}

const (
	textContentType = "text/plain; charset=utf-8"
	maxBodyBytes    = 1 << 20
	// IPAMNotRunning is the body of /status/ipam while IPAM is on but the
	// allocator is not (yet) running.
	IPAMNotRunning = "ipam: not running"
)

// NewAPIHandler returns the weaver HTTP API (see docs/http-api.md).
// Unknown paths get 404, known paths with the wrong method 405, and a
// panicking handler 500; the handler itself never panics.
func NewAPIHandler(cfg APIConfig) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &api{cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", a.status)
	mux.HandleFunc("GET /status/targets", a.statusText(WriteTargets))
	mux.HandleFunc("GET /status/connections", a.statusText(WriteConnections))
	mux.HandleFunc("GET /status/peers", a.statusText(WritePeers))
	mux.HandleFunc("GET /status/ipam", a.statusIPAM)
	mux.HandleFunc("GET /status/dns", a.statusDNS)
	mux.HandleFunc("GET /status/links", a.statusLinks) // ours: links.go
	mux.HandleFunc("GET /report", a.report)
	mux.Handle("GET /metrics", NewMetricsHandler(cfg.Backend.Report))
	if !cfg.ReadOnly && cfg.IPAMHandler != nil {
		for _, p := range []string{"/ip", "/ip/", "/ipinfo/", "GET /ring", "DELETE /peer/{id}"} {
			mux.Handle(p, cfg.IPAMHandler)
		}
	}
	if !cfg.ReadOnly && cfg.DNSHandler != nil {
		for _, p := range []string{"/name", "/name/", "GET /domain", "GET /dns-address", "GET /dns-address-port"} {
			mux.Handle(p, cfg.DNSHandler)
		}
	}
	if !cfg.ReadOnly {
		mux.HandleFunc("POST /connect", a.connect)
		mux.HandleFunc("POST /forget", a.forget)
		mux.HandleFunc("DELETE /peer", a.deletePeer)
		mux.HandleFunc("POST /expose/{ip}/{prefixlen}", a.expose)
		mux.HandleFunc("GET /proxyaddrs", a.proxyAddrs)
		if cfg.PProf {
			handlePProf(mux)
		}
	}
	return recoverMiddleware(cfg.Logger, mux)
}

func recoverMiddleware(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error("HTTP handler panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
				http.Error(w, "internal error", http.StatusInternalServerError)
			}
		}()
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// proxyAddrs is 2.8.1's GET /proxyaddrs: the proxy's listen addresses,
// space separated (empty when the proxy is off; weave env says so).
func (a *api) proxyAddrs(w http.ResponseWriter, _ *http.Request) {
	var addrs []string
	if p := a.cfg.Backend.Report().Proxy; p != nil {
		addrs = p.Addresses
	}
	writeText(w, http.StatusOK, strings.Join(addrs, " "))
}

func writeText(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", textContentType)
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

// oneLine makes an error message fit on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func (a *api) readyReport(w http.ResponseWriter) (Report, bool) {
	rep := a.cfg.Backend.Report()
	if !rep.Ready {
		writeText(w, http.StatusServiceUnavailable, "weave router is starting\n")
		return rep, false
	}
	return rep, true
}

func (a *api) ipamSummary() *IPAMSummary {
	if a.cfg.IPAM == "" {
		return nil
	}
	def := a.cfg.IPAMDefaultSubnet
	if def == "" {
		def = a.cfg.IPAM
	}
	return &IPAMSummary{Status: "not running", Range: a.cfg.IPAM, DefaultSubnet: def}
}

func (a *api) status(w http.ResponseWriter, r *http.Request) {
	rep, ok := a.readyReport(w)
	if !ok {
		return
	}
	sum := rep.IPAMSummary
	if sum == nil {
		sum = a.ipamSummary()
	}
	var b bytes.Buffer
	_ = WriteStatus(&b, &rep, sum)
	writeText(w, http.StatusOK, b.String())
}

func (a *api) statusText(write func(io.Writer, *RouterReport) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rep, ok := a.readyReport(w)
		if !ok {
			return
		}
		var b bytes.Buffer
		_ = write(&b, &rep.Router)
		writeText(w, http.StatusOK, b.String())
	}
}

func (a *api) statusIPAM(w http.ResponseWriter, r *http.Request) {
	if a.cfg.IPAM == "" {
		writeText(w, http.StatusServiceUnavailable, "IPAM disabled\n")
		return
	}
	if a.cfg.IPAMHandler == nil {
		writeText(w, http.StatusServiceUnavailable, IPAMNotRunning+"\n")
		return
	}
	a.cfg.IPAMHandler.ServeHTTP(w, r)
}

// DNSDisabled is 2.8.1's /status/dns body (HTTP 500) under --no-dns.
const DNSDisabled = "error during template execution"

func (a *api) statusDNS(w http.ResponseWriter, r *http.Request) {
	if a.cfg.DNSHandler == nil {
		writeText(w, http.StatusInternalServerError, DNSDisabled+"\n")
		return
	}
	if _, ok := a.readyReport(w); ok {
		a.cfg.DNSHandler.ServeHTTP(w, r)
	}
}

func (a *api) report(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeText(w, http.StatusBadRequest, "invalid query: "+oneLine(err.Error())+"\n")
		return
	}
	rep := a.cfg.Backend.Report()
	formats := r.Form["format"]
	if !strings.Contains(r.Header.Get("Accept"), "application/json") {
		// As 2.8.1: without Accept: application/json, exactly one format.
		if len(formats) != 1 {
			writeText(w, http.StatusBadRequest, "error: must supply one format parameter\n")
			return
		}
		a.reportTemplate(w, formats[0], &rep)
		return
	}
	out, err := json.MarshalIndent(&rep, "", "    ")
	if err != nil {
		a.cfg.Logger.Error("encode report", "err", err)
		writeText(w, http.StatusInternalServerError, "encode report: "+oneLine(err.Error())+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

func (a *api) reportTemplate(w http.ResponseWriter, format string, rep *Report) {
	out, err := runReportTemplate(format, rep)
	if err != nil {
		writeText(w, http.StatusBadRequest, oneLine(err.Error())+"\n")
		return
	}
	writeText(w, http.StatusOK, string(out))
}

func (a *api) parseForm(w http.ResponseWriter, r *http.Request) bool {
	if err := r.ParseForm(); err != nil {
		writeText(w, http.StatusBadRequest, "invalid form: "+oneLine(err.Error())+"\n")
		return false
	}
	return true
}

func (a *api) connect(w http.ResponseWriter, r *http.Request) {
	if !a.parseForm(w, r) {
		return
	}
	replace := r.Form.Get("replace") == "true"
	errs := a.cfg.Backend.Connect(r.Form["peer"], replace)
	if len(errs) > 0 {
		var b strings.Builder
		for _, err := range errs {
			b.WriteString(oneLine(err.Error()))
			b.WriteString("\n")
		}
		writeText(w, http.StatusBadRequest, b.String())
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (a *api) forget(w http.ResponseWriter, r *http.Request) {
	if !a.parseForm(w, r) {
		return
	}
	if err := a.cfg.Backend.Forget(r.Form["peer"]); err != nil {
		writeText(w, http.StatusInternalServerError, oneLine(err.Error())+"\n")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// deletePeer is `weave reset`'s "give my IP space away"; without IPAM
// there is nothing to hand over.
func (a *api) deletePeer(w http.ResponseWriter, r *http.Request) {
	if a.cfg.IPAMHandler != nil {
		a.cfg.IPAMHandler.ServeHTTP(w, r)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// expose is `weave expose`: POST /expose/{ip}/{prefixlen}[?skipNAT=true].
func (a *api) expose(w http.ResponseWriter, r *http.Request) {
	if !a.parseForm(w, r) {
		return
	}
	addr, err := netip.ParsePrefix(r.PathValue("ip") + "/" + r.PathValue("prefixlen"))
	if err != nil || !addr.Addr().Is4() {
		writeText(w, http.StatusBadRequest, "invalid address: want /expose/<IPv4>/<prefix length>\n")
		return
	}
	skipNAT := false
	switch v := r.Form.Get("skipNAT"); v {
	case "true":
		skipNAT = true
	case "", "false":
	default:
		writeText(w, http.StatusBadRequest, fmt.Sprintf("invalid skipNAT %q: want true or false\n", v))
		return
	}
	if err := a.cfg.Backend.Expose(addr, skipNAT); err != nil {
		writeText(w, http.StatusInternalServerError, oneLine(err.Error())+"\n")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handlePProf mounts the profiling handlers on mux (not the default mux).
func handlePProf(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}
