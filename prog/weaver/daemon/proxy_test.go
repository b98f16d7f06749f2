package daemon

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestProxyConfig(t *testing.T) {
	c := DefaultConfig(nil)
	c.Proxy = true
	if got := c.proxyListen(); len(got) != 1 || got[0] != "unix:///var/run/weave/weave.sock" {
		t.Fatalf("default listen with the default run dir: %q", got)
	}
	c.RunDir = "/tmp/r1"
	if got := c.proxyListen(); got[0] != "unix:///tmp/r1/weave.sock" {
		t.Fatalf("listen with --run-dir /tmp/r1: %q", got)
	}
	c.DockerAPI = "tcp://10.0.0.1:2375"
	if got := c.proxyListen(); got[0] != "tcp://0.0.0.0:12375" {
		t.Fatalf("listen with Docker on TCP: %q", got)
	}
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.ProxyCfg.Listen = []string{"udp://x"} }, `-H "udp://x": want unix:///path or tcp://host:port`},
		{func(c *Config) { c.ProxyCfg.Listen = []string{"unix://rel.sock"} }, `-H "unix://rel.sock": want unix:///absolute/path`},
		{func(c *Config) { c.ProxyCfg.TLS = true }, "--tls/--tlsverify: give --tlscert and --tlskey"},
		{func(c *Config) { c.ProxyCfg.TLSVerify, c.ProxyCfg.TLSCert, c.ProxyCfg.TLSKey = true, "c", "k" }, "--tlsverify: give --tlscacert"},
		{func(c *Config) { c.DockerAPI = "" }, "--proxy: needs a Docker API"},
	} {
		c := DefaultConfig(nil)
		c.Proxy = true
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want an error containing %q", err, tc.want)
		}
	}
	c = DefaultConfig(nil)
	c.Proxy, c.NoProxy, c.DockerAPI = true, true, ""
	if err := c.Validate(); err != nil {
		t.Fatalf("--no-proxy still validates the proxy: %v", err)
	}
}

func TestWeaveWaitMustBeStatic(t *testing.T) {
	c := DefaultConfig(nil)
	c.ProxyCfg.WeaveWait = filepath.Join(t.TempDir(), "missing")
	if _, err := c.weaveWaitPath(); err == nil || !strings.Contains(err.Error(), "--proxy-weavewait") {
		t.Fatalf("missing weavewait: %v", err)
	}
	c.ProxyCfg.WeaveWait = "/bin/ls" // dynamically linked on every distribution we run on
	if _, err := c.weaveWaitPath(); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Fatalf("dynamic weavewait: %v, want it refused", err)
	}
}
