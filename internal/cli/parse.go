package cli

import (
	"fmt"

	"github.com/seedf75a49c6/weave/internal/hostsfile"
	"net/netip"
	"strings"
)

// addrKind says where an attach/detach address comes from.
type addrKind int

const (
	addrExplicit   addrKind = iota // 10.2.1.1/24 or ip:10.2.1.1/24
	addrNet                        // net:10.2.0.0/16: allocate in that subnet (IPAM)
	addrNetDefault                 // net:default, or no address at all (IPAM)
)

// addrSpec is one parsed <addr>.
type addrSpec struct {
	kind   addrKind
	prefix netip.Prefix // explicit address or subnet; zero for addrNetDefault
	raw    string       // the argument as given, for messages
}

// parseCIDR parses an IPv4 a.b.c.d/n, naming the bad input on error.
func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		if _, aerr := netip.ParseAddr(s); aerr == nil {
			return netip.Prefix{}, fmt.Errorf("invalid address %q: give a prefix length, such as %s/24", s, s)
		}
		return netip.Prefix{}, fmt.Errorf("invalid address %q: want a CIDR such as 10.2.1.1/24", s)
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("invalid address %q: only IPv4 is supported", s)
	}
	return p, nil
}

// parseAddr parses [ip:]<cidr>, net:<cidr> or net:default.
func parseAddr(s string) (addrSpec, error) {
	switch {
	case s == "net:default":
		return addrSpec{kind: addrNetDefault}, nil
	case strings.HasPrefix(s, "net:"):
		p, err := parseCIDR(strings.TrimPrefix(s, "net:"))
		if err != nil {
			return addrSpec{}, err
		}
		return addrSpec{kind: addrNet, prefix: p.Masked()}, nil
	case strings.HasPrefix(s, "ip:"):
		s = strings.TrimPrefix(s, "ip:")
	}
	p, err := parseCIDR(s)
	if err != nil {
		return addrSpec{}, err
	}
	return addrSpec{kind: addrExplicit, prefix: p}, nil
}

// looksLikeAddr reports whether s is meant as an <addr> rather than a target.
func looksLikeAddr(s string) bool {
	return strings.HasPrefix(s, "ip:") || strings.HasPrefix(s, "net:") || strings.Contains(s, "/") && !strings.HasPrefix(s, "/")
}

// attachArgs is the parsed command line of attach and detach.
type attachArgs struct {
	addrs            []addrSpec // empty = net:default
	target           string
	noMulticastRoute bool
	name             string           // --name: weaveDNS name to register
	withoutDNS       bool             // --without-dns: register no name
	rewriteHosts     bool             // --rewrite-hosts: the container's /etc/hosts names it on its weave addresses
	addHosts         []hostsfile.Host // --add-host name:ip, written with --rewrite-hosts
}

// parseAttach parses `[<addr>...] [options] <target>`. detach accepts no options.
func parseAttach(verb string, args []string) (attachArgs, error) {
	var a attachArgs
	var pos []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case verb == "attach" && arg == "--no-multicast-route":
			a.noMulticastRoute = true
		case verb == "attach" && arg == "--without-dns":
			a.withoutDNS = true
		case verb == "attach" && arg == "--rewrite-hosts":
			a.rewriteHosts = true
		case verb == "attach" && (arg == "--name" || arg == "-h"):
			i++
			if i == len(args) || args[i] == "" {
				return a, usagef("%s: %s needs a DNS name", verb, arg)
			}
			a.name = args[i]
		case verb == "attach" && strings.HasPrefix(arg, "--name="):
			a.name = strings.TrimPrefix(arg, "--name=")
		case verb == "attach" && (arg == "--add-host" || strings.HasPrefix(arg, "--add-host=")):
			v, ok := strings.CutPrefix(arg, "--add-host=")
			if !ok {
				if i++; i == len(args) {
					return a, usagef("%s: --add-host needs a value (name:ip)", verb)
				}
				v = args[i]
			}
			h, err := hostsfile.ParseHost(v)
			if err != nil {
				return a, usagef("%s: %v", verb, err)
			}
			a.addHosts = append(a.addHosts, h)
		case strings.HasPrefix(arg, "-"):
			return a, usagef("%s: unknown option %q", verb, arg)
		default:
			pos = append(pos, arg)
		}
	}
	if len(pos) == 0 || looksLikeAddr(pos[len(pos)-1]) {
		return a, usagef("%s: missing target (a netns name or path, a PID, or a Docker container)", verb)
	}
	a.target = pos[len(pos)-1]
	for _, s := range pos[:len(pos)-1] {
		spec, err := parseAddr(s)
		if err != nil {
			return a, usagef("%s: %v", verb, err)
		}
		a.addrs = append(a.addrs, spec)
	}
	return a, nil
}

// parseAddrList parses the [ip:]CIDR, net:CIDR and net:default arguments
// of expose, separating its options (returned by name).
func parseAddrList(verb string, args []string, opts ...string) ([]addrSpec, map[string]bool, error) {
	seen := map[string]bool{}
	var out []addrSpec
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			if !contains(opts, a) {
				return nil, nil, usagef("%s: unknown option %q", verb, a)
			}
			seen[a] = true
			continue
		}
		spec, err := parseAddr(a)
		if err != nil {
			return nil, nil, usagef("%s: %v", verb, err)
		}
		spec.raw = a
		out = append(out, spec)
	}
	return out, seen, nil
}

// parseCIDRList parses the explicit CIDRs of hide: parseAddrList's forms,
// with the IPAM ones (net:...) refused.
func parseCIDRList(verb string, args []string, opts ...string) ([]netip.Prefix, map[string]bool, error) {
	specs, seen, err := parseAddrList(verb, args, opts...)
	if err != nil {
		return nil, nil, err
	}
	out := make([]netip.Prefix, 0, len(specs))
	for _, spec := range specs {
		if spec.kind != addrExplicit {
			return nil, nil, fmt.Errorf("%s %s: %w", verb, spec.raw, errNoIPAM)
		}
		out = append(out, spec.prefix)
	}
	return out, seen, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parseConnect parses `[--replace] <peer>...`.
func parseConnect(args []string) (peers []string, replace bool, err error) {
	for _, a := range args {
		switch {
		case a == "--replace":
			replace = true
		case strings.HasPrefix(a, "-"):
			return nil, false, usagef("connect: unknown option %q", a)
		default:
			peers = append(peers, a)
		}
	}
	if len(peers) == 0 && !replace {
		return nil, false, usagef("connect: give at least one peer (or --replace to clear the list)")
	}
	return peers, replace, nil
}

// statusSubs are the valid arguments of `weave status`.
var statusSubs = []string{"targets", "connections", "peers", "dns", "ipam", "links"}

func parseStatus(args []string) (string, error) {
	switch {
	case len(args) == 0:
		return "", nil
	case len(args) > 1:
		return "", usagef("status: too many arguments %q", args)
	case !contains(statusSubs, args[0]):
		return "", usagef("status: invalid argument %q: use one of %s", args[0], strings.Join(statusSubs, ", "))
	}
	return args[0], nil
}

// parseReport parses `[-f <template>]` (also --format, --format=, -f=).
func parseReport(args []string) (format string, err error) {
	switch {
	case len(args) == 0:
		return "", nil
	case len(args) == 2 && (args[0] == "-f" || args[0] == "--format"):
		return args[1], nil
	case len(args) == 1 && (strings.HasPrefix(args[0], "--format=") || strings.HasPrefix(args[0], "-f=")):
		return args[0][strings.Index(args[0], "=")+1:], nil
	}
	return "", usagef("report: invalid arguments %q: use [-f <format>]", args)
}

// launchArgs is the launch command line, passed to weaver unchanged.
type launchArgs struct {
	args  []string
	given map[string]string // valued weaver flags the user gave, by name without dashes
	bools map[string]bool   // boolean flags the user gave
}

// launchValued are weaver flags that take a value and that launch itself
// sets or reads; parseLaunch notes them so the environment does not override.
var launchValued = []string{"http-addr", "status-addr", "data-dir", "run-dir", "port", "mtu", "log-level", "password",
	"docker-api", "plugin-socket", "plugin-mesh-socket", "db-prefix",
	"H", "hostname-match", "hostname-replacement", "hostname-from-label", "tlscacert", "tlscert", "tlskey", "proxy-weavewait"}

func parseLaunch(args []string) (launchArgs, error) {
	l := launchArgs{args: args, given: map[string]string{}, bools: map[string]bool{}}
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || args[i] == "-" {
			continue
		}
		if args[i] == "--" {
			break
		}
		if !contains(launchValued, name) {
			l.bools[name] = true
			continue
		}
		if !hasVal {
			if i+1 == len(args) {
				return l, usagef("launch: %s needs a value", args[i])
			}
			i++
			val = args[i]
		}
		l.given[name] = val
	}
	return l, nil
}
