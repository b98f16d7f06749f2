package daemon

import (
	"strings"
	"testing"
	"time"
)

func TestDNSConfig(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string // "" = valid
	}{
		{func(c *Config) {}, ""},
		{func(c *Config) { c.DNSTTL = -1 }, "--dns-ttl"},
		{func(c *Config) { c.DNSFallbackTimeout = -time.Second }, "--dns-fallback-timeout"},
		{func(c *Config) { c.DNSListenAddress = "10.0.0.1" }, "--dns-listen-address"},
		{func(c *Config) { c.DNSListenAddress = "10.0.0.1"; c.NoDNS = true }, ""},
	} {
		c := DefaultConfig(nil)
		tc.mod(&c)
		err := c.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: Validate = %v, want %q", c, err, tc.want)
		}
	}
	c := DefaultConfig(nil)
	c.DockerBridge = "no-such-bridge-x"
	if got := c.dnsListenAddress(); got != "127.0.0.1:53" {
		t.Errorf("without a Docker bridge the DNS address is %s, want 127.0.0.1:53", got)
	}
	c.DNSListenAddress = "0.0.0.0:5353"
	if got := c.dnsListenAddress(); got != "0.0.0.0:5353" {
		t.Errorf("--dns-listen-address ignored: %s", got)
	}
}
