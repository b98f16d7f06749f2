package kube

import (
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// hostnameRE matches a DNS host name (peers may be given by name).
var hostnameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)

// peers parses KUBE_PEERS: addresses or host names, each with an optional
// :port, separated by spaces or commas. Unset is nil (ask the API).
func (p *envParser) peers(name string) []string {
	v := p.get(name, "")
	if v == "" {
		return nil
	}
	var out []string
	for _, peer := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if !validPeer(peer) {
			p.fail("%s: %q is not an IP address or host name (with an optional :port)", name, peer)
			continue
		}
		out = append(out, peer)
	}
	return out
}

func validPeer(s string) bool {
	host := s
	if i := strings.LastIndexByte(s, ':'); i > 0 {
		port, err := strconv.Atoi(s[i+1:])
		if err != nil || port < 1 || port > 65535 {
			return false
		}
		host = s[:i]
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return hostnameRE.MatchString(host)
}

// ipallocInit checks IPALLOC_INIT: consensus[=N], seed=<peer>[,<peer>...]
// or observer, as weaver's --ipalloc-init takes them.
func (p *envParser) ipallocInit(name string) string {
	v := p.get(name, "")
	if v == "" || v == "observer" || v == "consensus" {
		return v
	}
	mode, arg, _ := strings.Cut(v, "=")
	switch mode {
	case "consensus":
		if n, err := strconv.Atoi(arg); err == nil && n >= 1 {
			return v
		}
	case "seed":
		if arg != "" {
			return v
		}
	}
	p.fail("%s=%q: want consensus[=<number of peers>], seed=<peer>,... or observer", name, v)
	return ""
}

// exposeIP checks WEAVE_EXPOSE_IP: an address with prefix length, as
// `weave expose` takes it.
func (p *envParser) exposeIP(name string) string {
	v := p.get(name, "")
	if v == "" {
		return ""
	}
	if pfx, err := netip.ParsePrefix(v); err != nil || !pfx.Addr().Is4() {
		p.fail("%s=%q: want an IPv4 address with prefix length, such as 10.32.0.1/12", name, v)
		return ""
	}
	return v
}
