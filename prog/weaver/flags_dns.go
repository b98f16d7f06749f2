package main

import (
	"flag"

	"github.com/seedf75a49c6/weave/dns"
	"github.com/seedf75a49c6/weave/prog/weaver/daemon"
)

// registerDNSFlags registers weaveDNS's flags with 2.8.1's names and defaults.
func registerDNSFlags(fs *flag.FlagSet, c *daemon.Config) {
	c.DNSDomain = orDefault(c.DNSDomain, dns.DefaultDomain)
	if c.DNSTTL == 0 {
		c.DNSTTL = dns.DefaultTTL
	}
	if c.DNSFallbackTimeout == 0 {
		c.DNSFallbackTimeout = dns.DefaultFallbackTimeout
	}
	c.ResolvConf = orDefault(c.ResolvConf, dns.DefaultResolvConf)
	fs.BoolVar(&c.NoDNS, "no-dns", c.NoDNS, "disable weaveDNS (its gossip is still relayed)")
	fs.StringVar(&c.DNSDomain, "dns-domain", c.DNSDomain, "weaveDNS domain")
	fs.StringVar(&c.DNSListenAddress, "dns-listen-address", c.DNSListenAddress,
		"weaveDNS UDP and TCP address (default: the Docker bridge's address ($DOCKER_BRIDGE, docker0) port 53, else 127.0.0.1:53)")
	fs.IntVar(&c.DNSTTL, "dns-ttl", c.DNSTTL, "TTL of weaveDNS answers, in seconds")
	fs.DurationVar(&c.DNSFallbackTimeout, "dns-fallback-timeout", c.DNSFallbackTimeout, "timeout of one upstream DNS query")
	fs.StringVar(&c.ResolvConf, "resolv-conf", c.ResolvConf, "file listing the upstream DNS servers (\"\" = none)")
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
