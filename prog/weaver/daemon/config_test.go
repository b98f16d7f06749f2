package daemon

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfig(t *testing.T) {
	env := map[string]string{"WEAVE_PASSWORD": "s3cret", "WEAVE_DATA_DIR": "/d", "WEAVE_RUN_DIR": "/r"}
	c := DefaultConfig(func(k string) string { return env[k] })
	if c.Password != "s3cret" || c.DataDir != "/d" || c.RunDir != "/r" {
		t.Errorf("env not applied: %+v", c)
	}
	c = DefaultConfig(nil)
	if c.Port != 6783 || c.ConnLimit != 200 || c.HTTPAddr != "127.0.0.1:6784" || c.Bridge != "weave" ||
		c.IPAllocRange != "10.32.0.0/12" || c.DataDir != "/var/lib/weave" || c.RunDir != "/run/weave" ||
		c.MinProtocolVersion != 1 || c.NickName == "" {
		t.Errorf("defaults wrong: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	if c.BridgeMTU() != 65535 {
		t.Errorf("BridgeMTU = %d, want 65535", c.BridgeMTU())
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name    string
		mod     func(*Config)
		wantErr string // "" = valid
	}{
		{"name ok", func(c *Config) { c.Name = "aa:00:00:00:00:01" }, ""},
		{"bad name", func(c *Config) { c.Name = "zz" }, `--name: invalid peer name "zz"`},
		{"empty nickname", func(c *Config) { c.NickName = "" }, "--nickname: must not be empty"},
		{"port 0", func(c *Config) { c.Port = 0 }, "--port: invalid value 0"},
		{"port 65535", func(c *Config) { c.Port = 65535 }, "--port: invalid value 65535"},
		{"conn limit negative", func(c *Config) { c.ConnLimit = -1 }, "--conn-limit: invalid value -1"},
		{"conn limit unlimited", func(c *Config) { c.ConnLimit = 0 }, ""},
		{"protocol 3", func(c *Config) { c.MinProtocolVersion = 3 }, "--min-protocol-version: invalid value 3"},
		{"mtu small", func(c *Config) { c.MTU = 100 }, "--mtu: invalid value 100"},
		{"sleeve framing unknown", func(c *Config) { c.SleeveFraming = "gso" }, "--sleeve-framing: invalid value \"gso\""},
		{"busy poll negative", func(c *Config) { c.BusyPoll = -time.Millisecond }, "--busy-poll: invalid value -1ms"},
		{"mtu ok", func(c *Config) { c.MTU = 1376 }, ""},
		{"host bad", func(c *Config) { c.Host = "nohost" }, `--host: invalid IP address "nohost"`},
		{"resume with peers", func(c *Config) { c.Resume = true; c.Peers = []string{"10.0.0.1"} }, `--resume: cannot be combined with peer arguments "10.0.0.1"`},
		{"resume alone", func(c *Config) { c.Resume = true }, ""},
		{"peer flag-like", func(c *Config) { c.Peers = []string{"-x"} }, `peer argument: invalid value "-x"`},
		{"http addr unix", func(c *Config) { c.HTTPAddr = "/run/weave/weave.sock" }, ""},
		{"http addr bad", func(c *Config) { c.HTTPAddr = "localhost" }, `--http-addr: invalid address "localhost"`},
		{"status addr bad", func(c *Config) { c.StatusAddr = "x" }, `--status-addr: invalid address "x"`},
		{"bridge too long", func(c *Config) { c.Bridge = "weave-bridge-long" }, `--weave-bridge: invalid interface name "weave-bridge-long"`},
		{"no data dir", func(c *Config) { c.DataDir = "" }, "--data-dir: must not be empty"},
		{"no run dir", func(c *Config) { c.RunDir = "" }, "--run-dir: must not be empty"},
		{"log level", func(c *Config) { c.LogLevel = "loud" }, `--log-level: invalid value "loud"`},
		{"log level warning", func(c *Config) { c.LogLevel = "warning" }, ""},
		{"ipam off", func(c *Config) { c.IPAllocRange = "" }, ""},
		{"ipam range bad", func(c *Config) { c.IPAllocRange = "10.0.0.0" }, `--ipalloc-range: invalid IPv4 CIDR "10.0.0.0"`},
		{"default subnet outside", func(c *Config) { c.IPAllocDefaultSubnet = "192.168.0.0/24" }, "--ipalloc-default-subnet: 192.168.0.0/24 is not inside --ipalloc-range 10.32.0.0/12"},
		{"default subnet inside", func(c *Config) { c.IPAllocDefaultSubnet = "10.32.1.0/24" }, ""},
		{"default subnet without range", func(c *Config) { c.IPAllocRange = ""; c.IPAllocDefaultSubnet = "10.32.1.0/24" }, "--ipalloc-default-subnet: \"10.32.1.0/24\" needs --ipalloc-range"},
		{"trusted subnets", func(c *Config) { c.TrustedSubnets = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")} }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig(nil)
			tc.mod(&c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.wantErr)
			}
			if !strings.HasPrefix(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q, want one line starting %q", err, tc.wantErr)
			}
		})
	}
}

func TestValidateReportsEveryBadFlag(t *testing.T) {
	c := DefaultConfig(nil)
	c.Port, c.LogLevel = 0, "x"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "--port") || !strings.Contains(err.Error(), "--log-level") {
		t.Fatalf("want both --port and --log-level errors, got %v", err)
	}
}

func TestLivenessFlagsValidated(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.LivenessPort = 0 }, "--liveness-port: invalid value 0"},
		{func(c *Config) { c.LivenessPort = c.Port }, "collides with --port"},
		{func(c *Config) { c.IPAllocReclaimAfter = -time.Second }, "--ipalloc-reclaim-after: invalid value -1s"},
		{func(c *Config) { c.IPAllocReclaimAfter, c.NoLiveness = time.Minute, true }, "needs liveness"},
		{func(c *Config) { c.IPAllocReclaimAfter, c.IPAllocRange = time.Minute, "" }, "needs IPAM"},
	} {
		c := DefaultConfig(nil)
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
	c := DefaultConfig(nil)
	if c.LivenessPort != 6785 || c.NoLiveness || c.IPAllocReclaimAfter != 0 {
		t.Fatalf("defaults: port %d, off %v, reclaim %v", c.LivenessPort, c.NoLiveness, c.IPAllocReclaimAfter)
	}
}
