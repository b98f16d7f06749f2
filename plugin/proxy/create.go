package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
)

// maxCreateBody bounds the create requests the proxy reads.
const maxCreateBody = 16 << 20

// create rewrites a container create request (see rewriteCreate) and
// passes it on; a body it cannot read as a create request goes on
// unchanged, for dockerd to refuse.
func (p *Proxy) create(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCreateBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("weave proxy: read create request: %v", err))
		return
	}
	if len(body) > maxCreateBody {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("weave proxy: create request over %d bytes", maxCreateBody))
		return
	}
	name := strings.TrimPrefix(r.URL.Query().Get("name"), "/")
	var ce *cidrError
	if nb, err := p.rewriteCreate(r.Context(), name, body); errors.As(err, &ce) {
		writeError(w, http.StatusBadRequest, "weave proxy: "+err.Error())
		return
	} else if err != nil {
		p.log.Warn("container create passed on unchanged", "name", name, "err", err)
	} else {
		body = nb
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	r.TransferEncoding = nil
	p.upstream.ServeHTTP(w, r)
}

// skipReason says why a container stays off weave ("" = it goes on).
func (p *Proxy) skipReason(networkMode string, env []string) string {
	switch mode := container.NetworkMode(networkMode); {
	case mode.IsHost(), mode.IsNone(), mode.IsContainer():
		return "it has --net=" + networkMode
	case networkMode != "" && networkMode != "default" && networkMode != "bridge":
		return "it is on network " + networkMode + " (a network plugin's)"
	}
	cidr, ok := weaveCIDR(env)
	switch {
	case ok && strings.TrimSpace(cidr) == "none":
		return CIDREnv + "=none"
	case !ok && p.cfg.NoDefaultIPAM:
		return "it has no " + CIDREnv + " and the proxy runs with --no-default-ipalloc"
	}
	return ""
}

func weaveCIDR(env []string) (string, bool) {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, CIDREnv+"="); ok {
			return v, true
		}
	}
	return "", false
}

// rewriteCreate turns a create request into one that waits for ethwe:
// entrypoint /w/w before the command Docker would run, weavewait
// mounted read-only, a weaveDNS host name and resolver. Only the fields
// it changes are re-encoded; everything else reaches dockerd as sent
// (fields of API versions newer than our types included).
func (p *Proxy) rewriteCreate(ctx context.Context, name string, body []byte) ([]byte, error) {
	var req container.CreateRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("not a create request: %w", err)
	}
	if req.Config == nil {
		return nil, fmt.Errorf("create request without a container config")
	}
	var raw, hostRaw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, err
	}
	hc := req.HostConfig
	if hc == nil {
		hc = &container.HostConfig{}
	}
	if hr, ok := raw["HostConfig"]; ok && string(hr) != "null" {
		if err := json.Unmarshal(hr, &hostRaw); err != nil {
			return nil, err
		}
	}
	if hostRaw == nil {
		hostRaw = map[string]json.RawMessage{}
	}
	if why := p.skipReason(string(hc.NetworkMode), req.Env); why != "" {
		p.log.Debug("container stays off weave", "name", name, "why", why)
		return body, nil
	}
	if _, err := parseCIDRs(weaveCIDRValue(req.Env)); err != nil {
		return nil, err
	}
	ep, cmd, err := p.command(ctx, req.Config)
	if err != nil {
		return nil, err
	}
	set := func(m map[string]json.RawMessage, k string, v any) {
		data, _ := json.Marshal(v)
		m[k] = data
	}
	if len(ep) == 0 || ep[0] != WaitPath {
		if len(ep)+len(cmd) == 0 {
			return body, nil // dockerd refuses a container without a command
		}
		set(raw, "Entrypoint", append([]string{WaitPath}, ep...))
		set(raw, "Cmd", cmd)
	}
	bind := p.cfg.WeaveWait + ":" + WaitPath + ":ro"
	if !slices.Contains(hc.Binds, bind) {
		set(hostRaw, "Binds", append(slices.Clone(hc.Binds), bind))
	}
	if p.dnsOn() {
		if req.Hostname == "" {
			if h := p.deriveHostname(name, req.Labels); h != "" {
				set(raw, "Hostname", h)
				set(raw, "Domainname", strings.TrimSuffix(p.cfg.DNSDomain, "."))
			}
		}
		if len(hc.DNS) == 0 && p.cfg.DNSServer.IsValid() {
			set(hostRaw, "Dns", []string{p.cfg.DNSServer.String()})
		}
		if len(hc.DNSSearch) == 0 {
			set(hostRaw, "DnsSearch", []string{strings.TrimSuffix(p.cfg.DNSDomain, ".")})
		}
	}
	set(raw, "HostConfig", hostRaw)
	return json.Marshal(raw)
}

func weaveCIDRValue(env []string) string {
	v, _ := weaveCIDR(env)
	return v
}

func (p *Proxy) dnsOn() bool { return p.cfg.DNS != nil && !p.cfg.WithoutDNS && p.cfg.DNSDomain != "" }

// command is what Docker would run: the request's entrypoint and command,
// or the image's where the request leaves them out (an entrypoint given
// in the request drops the image's command, as in Docker).
func (p *Proxy) command(ctx context.Context, c *container.Config) (ep, cmd []string, err error) {
	ep, cmd = c.Entrypoint, c.Cmd
	if len(ep) == 1 && ep[0] == "" { // --entrypoint "": none, and no image command
		return nil, cmd, nil
	}
	if ep != nil {
		return ep, cmd, nil
	}
	img, err := p.engine.ImageInspect(ctx, c.Image)
	if err != nil {
		return nil, nil, fmt.Errorf("inspect image %s: %w", c.Image, err)
	}
	if img.Config != nil {
		ep = img.Config.Entrypoint
		if cmd == nil {
			cmd = img.Config.Cmd
		}
	}
	return ep, cmd, nil
}

// hostnameOK is what a derived host name may look like.
var hostnameOK = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62})?$`)

// deriveHostname is the container name (or --hostname-from-label's value)
// through --hostname-match and --hostname-replacement; "" when that is not
// a usable host name.
func (p *Proxy) deriveHostname(name string, labels map[string]string) string {
	if l := p.cfg.HostnameFromLabel; l != "" {
		if v, ok := labels[l]; ok {
			name = v
		}
	}
	if name == "" {
		return ""
	}
	h := p.hostRe.ReplaceAllString(name, p.cfg.HostnameReplacement)
	if !hostnameOK.MatchString(h) {
		p.log.Info("derived host name is not a valid host name; the container gets no weaveDNS name", "name", name, "hostname", h)
		return ""
	}
	return h
}

// cidrError is a WEAVE_CIDR the proxy cannot use: create is refused (400).
type cidrError struct{ msg string }

func (e *cidrError) Error() string { return e.msg }

// cidrSpec is one WEAVE_CIDR word: an address, or a subnet to allocate in
// (the zero prefix for IPAM's default subnet).
type cidrSpec struct {
	addr     netip.Prefix
	allocate bool
}

// parseCIDRs parses WEAVE_CIDR: words "a.b.c.d/n", "ip:a.b.c.d/n",
// "net:a.b.c.d/n", "net:default"; none at all = net:default.
func parseCIDRs(v string) ([]cidrSpec, error) {
	words := strings.Fields(v)
	if len(words) == 0 {
		return []cidrSpec{{allocate: true}}, nil
	}
	out := make([]cidrSpec, 0, len(words))
	for _, w := range words {
		if w == "net:default" {
			out = append(out, cidrSpec{allocate: true})
			continue
		}
		s, isNet := strings.CutPrefix(w, "net:")
		s = strings.TrimPrefix(s, "ip:")
		pfx, err := netip.ParsePrefix(s)
		if err != nil || !pfx.Addr().Is4() {
			return nil, &cidrError{fmt.Sprintf("%s=%q: %q is not an IPv4 address/prefix, ip:CIDR, net:CIDR or net:default", CIDREnv, v, w)}
		}
		if isNet {
			pfx = pfx.Masked()
		}
		out = append(out, cidrSpec{addr: pfx, allocate: isNet})
	}
	return out, nil
}
