package ipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/seedf75a49c6/weave/ipam/address"
)

// Handler serves Weave 2.8.1's IPAM routes; the daemon mounts it on its
// --http-addr mux:
//
//	GET  /ipinfo/defaultsubnet, /ipinfo/tracker, /ring, /ip, /ip/{id}, /ip/{id}/{ip}/{prefixlen}
//	GET  /ipinfo/ring                             our replica as JSON (ours, not 2.8.1's)
//	POST /ip/{id}, /ip/{id}/{ip}/{prefixlen}      allocate
//	PUT  /ip/{id}/{ip}/{prefixlen}                claim (?noErrorOnUnknown=true)
//	DELETE /ip/{id}, /ip/{id}/{ip}                release
//	DELETE /peer                                  hand over our space (weave reset)
//	DELETE /peer/{id}                             rmpeer
//	GET  /status/ipam                             `weave status ipam`
func (a *Allocator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ipinfo/defaultsubnet", func(w http.ResponseWriter, _ *http.Request) {
		text(w, a.cfg.DefaultSubnet.String())
	})
	mux.HandleFunc("GET /ipinfo/tracker", func(w http.ResponseWriter, _ *http.Request) { text(w, "") })
	mux.HandleFunc("GET /ipinfo/ring", a.serveRing)
	mux.HandleFunc("GET /ring", func(w http.ResponseWriter, r *http.Request) {
		if err := a.Prime(r.Context()); err != nil {
			httpError(w, err)
		}
	})
	mux.HandleFunc("GET /ip", a.serveOwned)
	mux.HandleFunc("GET /ip/{id}", a.serveLookup)
	mux.HandleFunc("GET /ip/{id}/{ip}/{prefixlen}", a.serveLookup)
	mux.HandleFunc("POST /ip/{id}", a.serveAllocate)
	mux.HandleFunc("POST /ip/{id}/{ip}/{prefixlen}", a.serveAllocate)
	mux.HandleFunc("PUT /ip/{id}/{ip}/{prefixlen}", a.serveClaim)
	mux.HandleFunc("DELETE /ip/{id}", func(w http.ResponseWriter, r *http.Request) {
		if err := a.Delete(r.PathValue("id")); err != nil {
			httpError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /ip/{id}/{ip}", a.serveFree)
	mux.HandleFunc("DELETE /peer", func(w http.ResponseWriter, _ *http.Request) {
		if err := a.Shutdown(); err != nil {
			httpError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /peer/{id}", func(w http.ResponseWriter, r *http.Request) {
		n, err := a.AdminTakeoverRanges(r.PathValue("id"))
		if err != nil {
			httpError(w, err)
			return
		}
		text(w, fmt.Sprintf("%d IPs taken over from %s\n", n, r.PathValue("id")))
	})
	mux.HandleFunc("GET /status/ipam", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		a.Status().WriteText(w)
	})
	return mux
}

func text(w http.ResponseWriter, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, s)
}

// httpError maps errors to status codes; the body is the error text.
// Weave 2.8.1 answers every refused request with 400; we do too, except
// where waiting or retrying can help (503: no consensus or space yet,
// stopped, shut down) and where the request conflicts with the mesh's
// state (409: rmpeer of a peer that is still reachable).
func httpError(w http.ResponseWriter, err error) {
	code := http.StatusBadRequest
	switch {
	case errors.Is(err, ErrPeerReachable), errors.Is(err, ErrPeerDropping):
		code = http.StatusConflict
	case errors.Is(err, ErrNoConsensus), errors.Is(err, ErrNoSpace), errors.Is(err, ErrStopped), errors.Is(err, ErrShutdown):
		code = http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled):
		text(w, "cancelled") // 2.8.1's answer when the client went away
		return
	}
	http.Error(w, err.Error(), code)
}

var errBadRequest = errors.New("bad request")

// subnetOf parses {ip}/{prefixlen} when present, else the default subnet.
func (a *Allocator) subnetOf(r *http.Request) (address.CIDR, error) {
	ip, plen := r.PathValue("ip"), r.PathValue("prefixlen")
	if ip == "" {
		return a.cfg.DefaultSubnet, nil
	}
	c, err := address.ParseCIDR(ip + "/" + plen)
	if err != nil {
		return c, fmt.Errorf("%w: %w", errBadRequest, err)
	}
	return c, nil
}

func (a *Allocator) serveAllocate(w http.ResponseWriter, r *http.Request) {
	subnet, err := a.subnetOf(r)
	if err != nil {
		httpError(w, err)
		return
	}
	c, err := a.Allocate(r.Context(), r.PathValue("id"), subnet)
	if err != nil {
		httpError(w, err)
		return
	}
	text(w, c.String())
}

func (a *Allocator) serveClaim(w http.ResponseWriter, r *http.Request) {
	c, err := a.subnetOf(r)
	if err != nil {
		httpError(w, err)
		return
	}
	noErr := r.FormValue("noErrorOnUnknown") == "true"
	if err := a.Claim(r.Context(), r.PathValue("id"), c, noErr); err != nil {
		httpError(w, fmt.Errorf("Unable to claim: %w", err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *Allocator) serveLookup(w http.ResponseWriter, r *http.Request) {
	subnet, err := a.subnetOf(r)
	if err != nil {
		httpError(w, err)
		return
	}
	cs, err := a.Lookup(r.PathValue("id"), subnet)
	if err != nil {
		httpError(w, err)
		return
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	text(w, strings.Join(parts, " "))
}

func (a *Allocator) serveFree(w http.ResponseWriter, r *http.Request) {
	ip, err := address.ParseIP(r.PathValue("ip"))
	if err != nil {
		httpError(w, fmt.Errorf("%w: %w", errBadRequest, err))
		return
	}
	if err := a.Free(r.PathValue("id"), ip); err != nil {
		httpError(w, fmt.Errorf("Unable to free: %w", err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type ownedJSON struct {
	ContainerID string   `json:"containerid"`
	Addrs       []string `json:"addrs"`
}

func (a *Allocator) serveOwned(w http.ResponseWriter, _ *http.Request) {
	owned, err := a.Owned()
	if err != nil {
		httpError(w, err)
		return
	}
	out := struct {
		Owned []ownedJSON `json:"owned"`
	}{}
	for id, cs := range owned {
		o := ownedJSON{ContainerID: id}
		for _, c := range cs {
			o.Addrs = append(o.Addrs, c.String())
		}
		out.Owned = append(out.Owned, o)
	}
	slices.SortFunc(out.Owned, func(x, y ownedJSON) int { return strings.Compare(x.ContainerID, y.ContainerID) })
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// RingJSON is our replica of the ring as GET /ipinfo/ring serves it: every
// token with its gossiped free count, which /report (2.8.1's layout)
// leaves out, so tools and tests can check the ring a router holds.
type RingJSON struct {
	Start, End string
	Peer       string
	Seeds      []string
	Entries    []RingEntryJSON
}

// RingEntryJSON is one token of RingJSON.
type RingEntryJSON struct {
	Token   string
	Peer    string
	Version uint32
	Free    uint32
}

func (a *Allocator) serveRing(w http.ResponseWriter, _ *http.Request) {
	var out RingJSON
	if err := a.do(func() { out = a.ringJSON() }); err != nil {
		httpError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (a *Allocator) ringJSON() RingJSON {
	u := a.cfg.Universe.Range()
	out := RingJSON{Start: u.Start.String(), End: u.End.String(), Peer: a.cfg.OurName.String(), Entries: []RingEntryJSON{}}
	for _, s := range a.ring.Seeds {
		out.Seeds = append(out.Seeds, s.String())
	}
	for _, e := range a.ring.AllEntries() {
		out.Entries = append(out.Entries, RingEntryJSON{Token: e.Token.String(), Peer: e.Peer.String(), Version: e.Version, Free: uint32(e.Free)})
	}
	return out
}
