package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"strings"

	"github.com/seedf75a49c6/weave/dns"
)

const (
	// DefaultPort is the TCP port of 2.8.1's proxy when Docker is on TCP.
	DefaultPort = 12375
	// SocketName is the proxy's unix socket in the run dir (2.8.1:
	// /var/run/weave/weave.sock).
	SocketName = "weave.sock"
	// WaitPath is where weavewait is mounted in proxied containers.
	WaitPath = "/w/w"
	// ContainerIf is the interface the proxy gives containers.
	ContainerIf = "ethwe"
	// CIDREnv is the environment variable naming a container's addresses.
	CIDREnv = "WEAVE_CIDR"
)

// Network is what the proxy needs from the router: addresses from IPAM
// and the veth into a container. The daemon implements it.
type Network interface {
	// Allocate returns ident's address in subnet (the zero prefix means
	// IPAM's default subnet), allocating one unless it has one there.
	Allocate(ctx context.Context, ident string, subnet netip.Prefix) (netip.Prefix, error)
	// Claim records addr as ident's (a no-op without IPAM).
	Claim(ctx context.Context, ident string, addr netip.Prefix) error
	// Release frees every address of ident; nothing held is no error.
	Release(ident string) error
	// Attach gives the container (its init pid) ethwe with addrs on the
	// bridge; it is idempotent.
	Attach(id string, pid int, addrs []netip.Prefix, noMulticastRoute bool) error
	// Addrs reads the container's ethwe (by its init pid): MAC and
	// IPv4 addresses; ok=false when it has none.
	Addrs(pid int) (mac net.HardwareAddr, addrs []netip.Prefix, ok bool)
	// Detached tells the router the container is gone (its attachment
	// record goes).
	Detached(id string)
}

// Config configures the proxy; zero values take 2.8.1's defaults.
type Config struct {
	DockerAPI string      // the real Docker API: unix:///path or tcp://host:port
	Listen    []string    // -H: unix:///path, tcp://host:port or host:port
	TLS       *tls.Config // served on the TCP listeners when set (--tls, --tlsverify)
	WeaveWait string      // host path of weavewait, mounted read-only at /w/w

	NoDefaultIPAM    bool // --no-default-ipalloc: attach only containers with WEAVE_CIDR
	NoRewriteHosts   bool // --no-rewrite-hosts
	RewriteInspect   bool // --rewrite-inspect: docker inspect shows the weave address
	NoMulticastRoute bool // --no-multicast-route
	WithoutDNS       bool // --without-dns: no names, no resolver settings

	HostnameMatch       string // --hostname-match: regexp on the container name; default (.*)
	HostnameReplacement string // --hostname-replacement; default $1
	HostnameFromLabel   string // --hostname-from-label: take the name from this label

	DNS       dns.Registry // weaveDNS; nil = no names (--no-dns)
	DNSDomain string       // weaveDNS domain, e.g. weave.local.
	DNSServer netip.Addr   // resolver given to containers that set none; invalid = none

	Network Network
	Engine  Engine // Docker client for inspect and events; default one on DockerAPI
	Logger  *slog.Logger
}

func (c *Config) validate() (*regexp.Regexp, error) {
	if c.HostnameMatch == "" {
		c.HostnameMatch = "(.*)"
	}
	if c.HostnameReplacement == "" {
		c.HostnameReplacement = "$1"
	}
	re, err := regexp.Compile(c.HostnameMatch)
	if err != nil {
		return nil, fmt.Errorf("--hostname-match: invalid regular expression %q: %w", c.HostnameMatch, err)
	}
	switch {
	case c.DockerAPI == "":
		return nil, errors.New("Docker API proxy: no Docker API to proxy (--docker-api \"\")")
	case len(c.Listen) == 0:
		return nil, errors.New("Docker API proxy: no listen address (-H)")
	case c.WeaveWait == "":
		return nil, errors.New("Docker API proxy: no weavewait binary")
	case c.Network == nil:
		return nil, errors.New("Docker API proxy: no network")
	}
	for _, l := range c.Listen {
		if _, _, err := ParseAddr(l); err != nil {
			return nil, err
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return re, nil
}

// ParseAddr splits a Docker-style address: unix:///path, tcp://host:port,
// or host:port (TCP). It names the bad input.
func ParseAddr(s string) (network, addr string, err error) {
	switch {
	case strings.HasPrefix(s, "unix://"):
		p := strings.TrimPrefix(s, "unix://")
		if !strings.HasPrefix(p, "/") {
			return "", "", fmt.Errorf("-H %q: want unix:///absolute/path", s)
		}
		return "unix", p, nil
	case strings.HasPrefix(s, "tcp://"):
		s = strings.TrimPrefix(s, "tcp://")
	case strings.Contains(s, "://"):
		return "", "", fmt.Errorf("-H %q: want unix:///path or tcp://host:port", s)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", "", fmt.Errorf("-H %q: want unix:///path or tcp://host:port", s)
	}
	return "tcp", net.JoinHostPort(host, port), nil
}

// DefaultListen is 2.8.1's listen address: the socket when Docker is on
// a unix socket, TCP 12375 on every address otherwise.
func DefaultListen(dockerAPI, socket string) string {
	if strings.HasPrefix(dockerAPI, "unix://") || dockerAPI == "" {
		return "unix://" + socket
	}
	return fmt.Sprintf("tcp://0.0.0.0:%d", DefaultPort)
}
