package main

import (
	"io"
	"slices"
	"testing"
)

// TestProxyFlags: 2.8.1's proxy flags as `weave launch` passes them.
func TestProxyFlags(t *testing.T) {
	args := []string{"--proxy", "-H", "unix:///run/w.sock", "-H=tcp://127.0.0.1:12375", "--no-default-ipalloc",
		"--no-rewrite-hosts", "--rewrite-inspect", "--without-dns", "--no-multicast-route",
		"--hostname-match", "^(.*)-x$", "--hostname-replacement", "h-$1", "--hostname-from-label", "dns",
		"--tls", "--tlscert", "/c.pem", "--tlskey", "/k.pem", "peer1"}
	cfg, _, err := parseFlags(args, io.Discard, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.ProxyCfg
	if !cfg.ProxyEnabled() || !slices.Equal(p.Listen, []string{"unix:///run/w.sock", "tcp://127.0.0.1:12375"}) ||
		!p.NoDefaultIPAM || !p.NoRewriteHosts || !p.RewriteInspect || !p.WithoutDNS || !p.NoMulticastRoute ||
		p.HostnameMatch != "^(.*)-x$" || p.HostnameReplacement != "h-$1" || p.HostnameFromLabel != "dns" ||
		!p.TLS || p.TLSCert != "/c.pem" || p.TLSKey != "/k.pem" || !slices.Equal(cfg.Peers, []string{"peer1"}) {
		t.Fatalf("config: %+v peers %v", p, cfg.Peers)
	}
	if cfg, _, err := parseFlags([]string{"--proxy", "--no-proxy"}, io.Discard, env(nil)); err != nil || cfg.ProxyEnabled() {
		t.Fatalf("--no-proxy: %v %v", cfg.ProxyEnabled(), err)
	}
}
