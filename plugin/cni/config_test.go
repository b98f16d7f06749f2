package cni

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
)

func TestParseNetConfDefaults(t *testing.T) {
	t.Setenv(DataDirEnv, "")
	c, err := ParseNetConf([]byte(`{"cniVersion":"1.1.0","name":"weave","type":"weave-net"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Bridge != "weave" || !c.hairpin() || c.DataDir != DefaultDataDir || !c.IPAM.ours() || c.MTU != 0 {
		t.Fatalf("defaults: %+v", c)
	}
	t.Setenv(DataDirEnv, "/tmp/x")
	c, _ = ParseNetConf([]byte(`{"name":"weave","hairpinMode":false,"ipam":{"type":"host-local","subnet":"junk"}}`))
	if c.DataDir != "/tmp/x" || c.hairpin() || c.IPAM.ours() {
		t.Fatalf("env data dir, hairpin off, delegated IPAM: %+v", c)
	}
}

func TestParseNetConfIPAM(t *testing.T) {
	c, err := ParseNetConf([]byte(`{"name":"w","ipam":{"type":"weave-ipam","subnet":"10.32.4.0/24","gateway":"10.32.4.1",
		"routes":[{"dst":"0.0.0.0/0"},{"dst":"192.168.0.0/16","gw":"10.32.4.254"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.IPAM.subnet != netip.MustParsePrefix("10.32.4.0/24") || c.IPAM.gateway != netip.MustParseAddr("10.32.4.1") {
		t.Fatalf("subnet/gateway: %+v", c.IPAM)
	}
	rs := withGateway(c.IPAM.routes, c.IPAM.gateway)
	if len(rs) != 2 || rs[0].gw != c.IPAM.gateway || rs[1].gw != netip.MustParseAddr("10.32.4.254") {
		t.Fatalf("routes: %+v", rs)
	}
	if d := withGateway(nil, c.IPAM.gateway); len(d) != 1 || d[0].dst.Bits() != 0 {
		t.Fatalf("no routes must mean a default route: %+v", d)
	}
}

func TestParseNetConfErrors(t *testing.T) {
	cases := []struct {
		conf string
		code uint
		msg  string
	}{
		{`{"name":`, types.ErrDecodingFailure, "not valid JSON"},
		{`{"name":"w","mtu":"x"}`, types.ErrInvalidNetworkConfig, `"mtu" has the wrong type`},
		{`{"name":"w","mtu":20}`, types.ErrInvalidNetworkConfig, `"mtu": 20`},
		{`{"name":"w","hairpinMode":"yes"}`, types.ErrInvalidNetworkConfig, `"hairpinMode"`},
		{`{"name":"w","isGateway":true}`, types.ErrUnsupportedField, "isGateway"},
		{`{"name":"w","ipMasq":true}`, types.ErrUnsupportedField, "ipMasq"},
		{`{"name":"w","ipam":{"subnet":"10.0.0.1/8"}}`, types.ErrInvalidNetworkConfig, "did you mean 10.0.0.0/8"},
		{`{"name":"w","ipam":{"subnet":"fd00::/64"}}`, types.ErrInvalidNetworkConfig, `"fd00::/64"`},
		{`{"name":"w","ipam":{"gateway":"10.0.0"}}`, types.ErrInvalidNetworkConfig, `ipam.gateway": "10.0.0"`},
		{`{"name":"w","ipam":{"routes":[{"dst":"0.0.0.0/0","gw":"x"}]}}`, types.ErrInvalidNetworkConfig, `ipam.routes[0].gw": "x"`},
		{`{"name":"w","ipam":{"routes":"all"}}`, types.ErrInvalidNetworkConfig, `"ipam.routes" has the wrong type`},
	}
	for _, tc := range cases {
		_, err := ParseNetConf([]byte(tc.conf))
		var te *types.Error
		if !errors.As(err, &te) || te.Code != tc.code || !strings.Contains(te.Msg, tc.msg) {
			t.Errorf("%s: got %v, want code %d with %q", tc.conf, err, tc.code, tc.msg)
		}
	}
}

func TestIPAMConfIgnoresOtherPluginsFields(t *testing.T) {
	c, err := parseIPAMConf([]byte(`{"name":"b","type":"bridge","isGateway":true,"ipam":{"type":"weave-ipam","subnet":"10.32.8.0/24"}}`))
	if err != nil || c.IPAM.subnet.String() != "10.32.8.0/24" {
		t.Fatalf("%+v %v", c, err)
	}
}

func TestGCRequested(t *testing.T) {
	for conf, want := range map[string]bool{
		`{"name":"w"}`: false,
		`{"name":"w","cni.dev/valid-attachments":[]}`: true,
		`{"name":"w","cni.dev/attachments":null}`:     true,
	} {
		if got := gcRequested([]byte(conf)); got != want {
			t.Errorf("gcRequested(%s) = %v", conf, got)
		}
	}
}

func TestStoreRoundTrip(t *testing.T) {
	s := newStore(t.TempDir(), "weave-net", "weave")
	r := record{ContainerID: "abc", IfName: "eth0", Addrs: []netip.Prefix{netip.MustParsePrefix("10.32.0.3/12")}}
	if err := s.save(r); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.load("abc", "eth0")
	if err != nil || !ok || got.Addrs[0] != r.Addrs[0] {
		t.Fatalf("load: %+v %v %v", got, ok, err)
	}
	if _, ok, _ := s.load("abc", "eth1"); ok {
		t.Fatal("eth1 must have no record")
	}
	list, err := s.list()
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %v %v", list, err)
	}
	if err := s.remove("abc", "eth0"); err != nil {
		t.Fatal(err)
	}
	if err := s.remove("abc", "eth0"); err != nil {
		t.Fatalf("second remove: %v", err)
	}
}

// FuzzParseNetConf: any input gives a config or a CNI error object, never
// a panic or a bare Go error.
func FuzzParseNetConf(f *testing.F) {
	for _, s := range []string{`{"name":"w"}`, `{"name":"w","mtu":1400,"ipam":{"subnet":"10.32.0.0/12","routes":[{"dst":"0.0.0.0/0"}]}}`,
		`{"name":1}`, `[]`, `{"ipam":{"routes":[{}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte) error{
			func(b []byte) error { _, err := ParseNetConf(b); return err },
			func(b []byte) error { _, err := parseIPAMConf(b); return err },
		} {
			if err := parse(data); err != nil {
				var te *types.Error
				if !errors.As(err, &te) || te.Msg == "" {
					t.Fatalf("error %T %v is not a CNI error object", err, err)
				}
			}
		}
	})
}

func TestIPAMState(t *testing.T) {
	status := "\n        Version: 3.0.0\n\n        Service: router\n         Status: whatever\n\n" +
		"        Service: ipam\n         Status: awaiting consensus (quorum: 2, known: 1)\n          Range: 10.32.0.0/12\n"
	if got := ipamState(status); got != "awaiting consensus (quorum: 2, known: 1)" || ipamUsable(got) {
		t.Fatalf("ipamState = %q", got)
	}
	for _, ok := range []string{"ready", "idle", ""} {
		if !ipamUsable(ok) {
			t.Errorf("%q must be usable", ok)
		}
	}
	if ipamUsable("all IP ranges owned by unreachable peers - use 'rmpeer' if they are dead") {
		t.Error("unreachable owners must not be usable")
	}
}
