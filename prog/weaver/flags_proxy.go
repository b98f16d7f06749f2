package main

import (
	"flag"

	"github.com/seedf75a49c6/weave/prog/weaver/daemon"
)

// registerProxyFlags registers the Docker API proxy's flags (2.8.1's
// names; --proxy-weavewait is ours).
func registerProxyFlags(fs *flag.FlagSet, c *daemon.Config) {
	p := &c.ProxyCfg
	fs.BoolVar(&c.Proxy, "proxy", c.Proxy, "serve the Docker API proxy (eval $(weave env); docker run ...)")
	fs.BoolVar(&c.NoProxy, "no-proxy", c.NoProxy, "do not serve the Docker API proxy (overrides --proxy)")
	fs.Func("H", "proxy listen address, repeatable: unix:///path or tcp://host:port (default unix://<run dir>/weave.sock, or tcp://0.0.0.0:12375 when Docker is on TCP)", func(s string) error {
		p.Listen = append(p.Listen, s)
		return nil
	})
	fs.StringVar(&p.WeaveWait, "proxy-weavewait", p.WeaveWait, "static weavewait binary mounted at /w/w in proxied containers (default: weavewait next to weaver)")
	fs.BoolVar(&p.NoDefaultIPAM, "no-default-ipalloc", p.NoDefaultIPAM, "proxy: attach only containers that set WEAVE_CIDR")
	fs.BoolVar(&p.NoRewriteHosts, "no-rewrite-hosts", p.NoRewriteHosts, "proxy: leave containers' /etc/hosts as Docker wrote it")
	fs.BoolVar(&p.RewriteInspect, "rewrite-inspect", p.RewriteInspect, "proxy: docker inspect shows the weave address and MAC")
	fs.BoolVar(&p.WithoutDNS, "without-dns", p.WithoutDNS, "proxy: no weaveDNS names or resolver settings for containers")
	fs.BoolVar(&p.NoMulticastRoute, "no-multicast-route", p.NoMulticastRoute, "proxy: no 224.0.0.0/4 route on ethwe")
	fs.StringVar(&p.HostnameMatch, "hostname-match", "(.*)", "proxy: regular expression on the container name for its weaveDNS host name")
	fs.StringVar(&p.HostnameReplacement, "hostname-replacement", "$1", "proxy: host name made from --hostname-match's groups")
	fs.StringVar(&p.HostnameFromLabel, "hostname-from-label", p.HostnameFromLabel, "proxy: take the host name from this container label instead of the name")
	fs.BoolVar(&p.TLS, "tls", p.TLS, "proxy: serve TCP listeners over TLS (--tlscert, --tlskey)")
	fs.BoolVar(&p.TLSVerify, "tlsverify", p.TLSVerify, "proxy: TLS, and require client certificates signed by --tlscacert")
	fs.StringVar(&p.TLSCACert, "tlscacert", p.TLSCACert, "proxy: CA certificate that client certificates must be signed by")
	fs.StringVar(&p.TLSCert, "tlscert", p.TLSCert, "proxy: server certificate")
	fs.StringVar(&p.TLSKey, "tlskey", p.TLSKey, "proxy: server key")
}
