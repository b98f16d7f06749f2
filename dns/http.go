package dns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// Extern is the container ID of names not bound to a container
// (`weave dns-add` without one), as in 2.8.1.
const Extern = "weave:extern"

// HTTPConfig is what Handler needs besides the nameserver.
type HTTPConfig struct {
	Server *Server // for /dns-address and the status; nil = not serving DNS
	// IsAlive reports whether a container still exists, for PUT's
	// check-alive=true; nil = every container is alive.
	IsAlive func(containerID string) bool
}

// Handler serves 2.8.1's weaveDNS routes; the daemon mounts it on the
// --http-addr mux:
//
//	GET    /domain                              the DNS domain
//	PUT    /name/{container}/{ip}  fqdn=..      add an entry (204)
//	DELETE /name[/{container}[/{ip}]] ?fqdn=..  tombstone matching entries (204)
//	GET    /name                                entries as JSON
//	GET    /dns-address, /dns-address-port      where the server listens
//	GET    /status/dns                          `weave status dns`
func (n *Nameserver) Handler(cfg HTTPConfig) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /domain", func(w http.ResponseWriter, _ *http.Request) { text(w, n.domain) })
	mux.HandleFunc("PUT /name/{container}/{ip}", n.servePut(cfg))
	for _, p := range []string{"/name", "/name/{container}", "/name/{container}/{ip}"} {
		mux.HandleFunc("DELETE "+p, n.serveDelete)
	}
	mux.HandleFunc("GET /name", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(n.Status(cfg.Server).Entries)
	})
	addr := func(w http.ResponseWriter, _ *http.Request) {
		if cfg.Server == nil {
			http.Error(w, "weaveDNS server is not running", http.StatusNotFound)
			return
		}
		text(w, cfg.Server.Addr())
	}
	mux.HandleFunc("GET /dns-address", func(w http.ResponseWriter, r *http.Request) {
		if cfg.Server != nil {
			host, _, _ := net.SplitHostPort(cfg.Server.Addr())
			text(w, host)
			return
		}
		addr(w, r)
	})
	mux.HandleFunc("GET /dns-address-port", addr)
	mux.HandleFunc("GET /status/dns", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		n.WriteEntries(w)
	})
	return mux
}

func (n *Nameserver) servePut(cfg HTTPConfig) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("container")
		ip, err := parseIPv4(r.PathValue("ip"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fqdn := r.FormValue("fqdn")
		if fqdn == "" {
			http.Error(w, "missing fqdn", http.StatusBadRequest)
			return
		}
		if r.FormValue("check-alive") == "true" && cfg.IsAlive != nil && !cfg.IsAlive(id) {
			http.Error(w, fmt.Sprintf("container %s is not running", id), http.StatusNotFound)
			return
		}
		if err := n.AddEntry(fqdn, id, ip); err != nil {
			code := http.StatusBadRequest
			if errors.Is(err, errSave) {
				code = http.StatusInternalServerError
			}
			http.Error(w, err.Error(), code)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func (n *Nameserver) serveDelete(w http.ResponseWriter, r *http.Request) {
	m := Match{Hostname: r.FormValue("fqdn"), ContainerID: r.PathValue("container")}
	if ip := r.PathValue("ip"); ip != "" && ip != "*" {
		a, err := parseIPv4(ip)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m.Addr = a
	}
	if _, err := n.Delete(m); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func text(w http.ResponseWriter, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, s)
}

// StatusEntry is one entry in the report JSON (2.8.1's field names).
type StatusEntry struct {
	Hostname    string
	Origin      string
	ContainerID string
	Address     string
	Version     int
	Tombstone   int64
}

// Status is the DNS part of `weave report` (2.8.1's shape).
type Status struct {
	Domain   string
	Upstream []string
	Address  string
	TTL      uint32
	Entries  []StatusEntry
}

// Status snapshots the replica and the server's settings (srv may be nil).
func (n *Nameserver) Status(srv *Server) *Status {
	st := &Status{Domain: n.domain, Upstream: []string{}, Entries: []StatusEntry{}}
	if srv != nil {
		st.Address, st.TTL = srv.Addr(), srv.TTL()
		for _, u := range srv.Upstream() {
			host, _, _ := net.SplitHostPort(u)
			st.Upstream = append(st.Upstream, host)
		}
	}
	for _, e := range n.Entries() {
		st.Entries = append(st.Entries, StatusEntry{Hostname: e.Hostname, Origin: e.Origin.String(),
			ContainerID: e.ContainerID, Address: e.IP().String(), Version: e.Version, Tombstone: e.Tombstone})
	}
	return st
}

// LiveCount is the number of live entries (`weave status`'s Entries line).
func (st *Status) LiveCount() int {
	c := 0
	for _, e := range st.Entries {
		if e.Tombstone == 0 {
			c++
		}
	}
	return c
}

// WriteEntries writes `weave status dns`: one line per live entry, as
// 2.8.1 prints it (hostname without the domain, address, container ID cut
// to 12 characters, origin).
func (n *Nameserver) WriteEntries(w io.Writer) {
	for _, e := range n.Entries() {
		if !e.Live() {
			continue
		}
		host := strings.TrimSuffix(e.Hostname, "."+n.domain)
		if len(host) == len(e.Hostname) { // the domain matched in another case
			if i := len(e.Hostname) - len(n.domain) - 1; i > 0 && strings.EqualFold(e.Hostname[i:], "."+n.domain) {
				host = e.Hostname[:i]
			}
		}
		fmt.Fprintf(w, "%-12v %-15v %12.12v %v\n", host, e.IP(), e.ContainerID, e.Origin)
	}
}
