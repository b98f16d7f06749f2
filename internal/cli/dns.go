package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/seedf75a49c6/weave/internal/api"
)

// DNSExtern is the container ID of names bound to no container (2.8.1's).
const DNSExtern = "weave:extern"

// errNoDNS: the router does not run weaveDNS (not running, or --no-dns).
var errNoDNS = errors.New("weaveDNS is not running (router not started, or launched with --no-dns)")

// dnsArgs is the command line of dns-add and dns-remove:
// [<ip> ...] [<target>] [-h <fqdn>].
type dnsArgs struct {
	ips    []netip.Addr
	target string
	fqdn   string
}

func parseDNSArgs(verb string, args []string) (dnsArgs, error) {
	var a dnsArgs
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "-h" || arg == "--hostname":
			if i++; i == len(args) || args[i] == "" {
				return a, usagef("%s: %s needs a DNS name", verb, arg)
			}
			a.fqdn = args[i]
		case strings.HasPrefix(arg, "-h="):
			a.fqdn = strings.TrimPrefix(arg, "-h=")
		case strings.HasPrefix(arg, "-"):
			return a, usagef("%s: unknown option %q", verb, arg)
		default:
			if ip, err := netip.ParseAddr(arg); err == nil {
				if !ip.Is4() {
					return a, usagef("%s: %s: only IPv4 addresses have DNS names", verb, arg)
				}
				a.ips = append(a.ips, ip)
				continue
			}
			if a.target != "" {
				return a, usagef("%s: more than one container: %q and %q", verb, a.target, arg)
			}
			a.target = arg
		}
	}
	if a.target == "" && len(a.ips) == 0 {
		return a, usagef("%s: give IP addresses and -h <fqdn>, and/or a container", verb)
	}
	return a, nil
}

// dnsDomain asks the router for the weaveDNS domain.
func (c *cmd) dnsDomain(ctx context.Context) (string, error) {
	d, err := c.api.DNSDomain(ctx)
	if api.IsNotRunning(err) || api.StatusCode(err) == 404 {
		return "", errNoDNS
	}
	return d, err
}

// qualifyName makes name fully qualified in domain ("db" -> db.weave.local.)
// and checks that it is inside it.
func qualifyName(name, domain string) (string, error) {
	if !strings.Contains(strings.TrimSuffix(name, "."), ".") {
		name = strings.TrimSuffix(name, ".") + "." + domain
	}
	fq := mdns.Fqdn(name)
	if !mdns.IsSubDomain(domain, strings.ToLower(fq)) || strings.EqualFold(fq, domain) {
		return "", fmt.Errorf("DNS name %q is not in the weaveDNS domain %s", name, domain)
	}
	return fq, nil
}

// dnsTarget resolves the container of a dns-add/remove: its ID, its
// addresses on the weave interface and its Docker host name.
func (c *cmd) dnsTarget(ctx context.Context, a dnsArgs) (target, []netip.Addr, error) {
	if a.target == "" {
		return target{ID: DNSExtern}, a.ips, nil
	}
	t, err := c.resolveTarget(ctx, a.target)
	if err != nil {
		return t, nil, err
	}
	if len(a.ips) > 0 {
		return t, a.ips, nil
	}
	_, addrs, _, err := c.Kernel.ContainerAddrs(t.NetNS, ContainerIf)
	if err != nil {
		return t, nil, fmt.Errorf("addresses of %s: %w", a.target, err)
	}
	var ips []netip.Addr
	for _, p := range addrs {
		ips = append(ips, p.Addr())
	}
	return t, ips, nil
}

// runDNSAdd is `weave dns-add [<ip> ...] [<target>] [-h <fqdn>]`.
func runDNSAdd(ctx context.Context, c *cmd, args []string) error {
	a, err := parseDNSArgs("dns-add", args)
	if err != nil {
		return err
	}
	domain, err := c.dnsDomain(ctx)
	if err != nil {
		return err
	}
	t, ips, err := c.dnsTarget(ctx, a)
	if err != nil {
		return err
	}
	name := orDefault(a.fqdn, t.Hostname)
	if name == "" {
		return usagef("dns-add: -h <fqdn> is needed (%s has no host name)", orDefault(a.target, "an address"))
	}
	if name, err = qualifyName(name, domain); err != nil {
		return err
	}
	if len(ips) == 0 {
		return fmt.Errorf("dns-add: %s has no address on the weave network", a.target)
	}
	for _, ip := range ips {
		if err := c.api.AddName(ctx, t.ID, ip, name, false); err != nil {
			return fmt.Errorf("add %s -> %s: %w", name, ip, err)
		}
	}
	return nil
}

// runDNSRemove is `weave dns-remove [<ip> ...] [<target>] [-h <fqdn>]`:
// without addresses every name of the container goes.
func runDNSRemove(ctx context.Context, c *cmd, args []string) error {
	a, err := parseDNSArgs("dns-remove", args)
	if err != nil {
		return err
	}
	domain, err := c.dnsDomain(ctx)
	if err != nil {
		return err
	}
	name := a.fqdn
	if name != "" {
		if name, err = qualifyName(name, domain); err != nil {
			return err
		}
	}
	id := DNSExtern
	if a.target != "" {
		t, err := c.resolveTarget(ctx, a.target)
		if err != nil {
			return err
		}
		id = t.ID
	}
	if len(a.ips) == 0 {
		return c.api.DeleteName(ctx, id, netip.Addr{}, name)
	}
	for _, ip := range a.ips {
		if err := c.api.DeleteName(ctx, id, ip, name); err != nil {
			return fmt.Errorf("remove %s: %w", ip, err)
		}
	}
	return nil
}

// runDNSLookup is `weave dns-lookup <name>`: the A records weaveDNS gives,
// one per line (like dig +short).
func runDNSLookup(ctx context.Context, c *cmd, args []string) error {
	if len(args) != 1 {
		return usagef("dns-lookup: want one name")
	}
	addr, err := c.api.DNSAddress(ctx)
	if api.IsNotRunning(err) || api.StatusCode(err) == 404 {
		return errNoDNS
	}
	if err != nil {
		return err
	}
	ips, err := lookupA(ctx, addr, args[0])
	if err != nil {
		return err
	}
	for _, ip := range ips {
		fmt.Fprintln(c.Stdout, ip)
	}
	return nil
}

// lookupA asks server for name's A records, over TCP when UDP was truncated.
func lookupA(ctx context.Context, server, name string) ([]string, error) {
	q := new(mdns.Msg)
	q.SetQuestion(mdns.Fqdn(name), mdns.TypeA)
	var r *mdns.Msg
	var err error
	for _, proto := range []string{"udp", "tcp"} {
		cl := &mdns.Client{Net: proto, Timeout: 5 * time.Second}
		if r, _, err = cl.ExchangeContext(ctx, q, server); err != nil {
			return nil, fmt.Errorf("query weaveDNS at %s: %w", server, err)
		}
		if !r.Truncated {
			break
		}
	}
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*mdns.A); ok {
			out = append(out, a.A.String())
		}
	}
	return out, nil
}

// runDNSArgs is `weave dns-args`: the docker run flags that make a
// container use weaveDNS; nothing when it does not run.
func runDNSArgs(ctx context.Context, c *cmd, args []string) error {
	if len(args) > 0 {
		return usagef("dns-args: unexpected arguments %q", args)
	}
	addr, err := c.api.DNSAddress(ctx)
	if err != nil {
		return nil
	}
	domain, err := c.dnsDomain(ctx)
	if err != nil {
		return nil
	}
	host, _, _ := net.SplitHostPort(addr)
	fmt.Fprintf(c.Stdout, "--dns=%s --dns-search=%s\n", host, strings.TrimSuffix(domain, "."))
	return nil
}

// attachName is the weaveDNS name `weave attach` registers: --name, else
// a Docker container's host name when it is inside the domain; "" for
// none. An explicit name outside the domain is an error.
func (c *cmd) attachName(ctx context.Context, a attachArgs, t target) (string, error) {
	if a.withoutDNS || (a.name == "" && t.Hostname == "") {
		return "", nil
	}
	domain, err := c.dnsDomain(ctx)
	if err != nil {
		if a.name != "" {
			return "", fmt.Errorf("attach --name %s: %w", a.name, err)
		}
		return "", nil
	}
	if a.name != "" {
		return qualifyName(a.name, domain)
	}
	if !strings.Contains(t.Hostname, ".") {
		return "", nil // 2.8.1 registers only host names with a domain
	}
	name, err := qualifyName(t.Hostname, domain)
	if err != nil {
		return "", nil // a Docker domain of its own: not ours to name
	}
	return name, nil
}

// registerNames adds name -> each address for the container.
func (c *cmd) registerNames(ctx context.Context, id, name string, addrs []netip.Prefix) error {
	for _, p := range addrs {
		if err := c.api.AddName(ctx, id, p.Addr(), name, true); err != nil {
			return fmt.Errorf("register DNS name %s -> %s: %w", name, p.Addr(), err)
		}
	}
	return nil
}

// forgetNames tombstones the container's names for addrs (all of them
// when all); a router without weaveDNS has nothing to forget.
func (c *cmd) forgetNames(ctx context.Context, id string, addrs []netip.Prefix, all bool) {
	del := func(ip netip.Addr) {
		err := c.api.DeleteName(ctx, id, ip, "")
		if err != nil && !api.IsNotRunning(err) && api.StatusCode(err) != 404 {
			c.Logger.Warn("could not remove DNS names", "id", id, "err", err)
		}
	}
	if all {
		del(netip.Addr{})
		return
	}
	for _, p := range addrs {
		del(p.Addr())
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
