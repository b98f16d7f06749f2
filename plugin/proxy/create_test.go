package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func testProxy(t *testing.T, mod func(*Config)) (*Proxy, *fakeEngine, *fakeNet, *fakeDNS) {
	t.Helper()
	eng, nw, names := newFakeEngine(), newFakeNet(), &fakeDNS{}
	eng.image("nginx", []string{"/docker-entrypoint.sh"}, []string{"nginx", "-g", "daemon off;"})
	eng.image("busybox", nil, []string{"sh"})
	cfg := Config{
		DockerAPI: "unix:///nonexistent/docker.sock", Listen: []string{"unix://" + t.TempDir() + "/weave.sock"},
		WeaveWait: "/opt/weave/weavewait", Network: nw, Engine: eng, DNS: names, DNSDomain: "weave.local.",
		DNSServer: netip.MustParseAddr("172.17.0.1"), Logger: slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, eng, nw, names
}

// TestRewriteCreate: what the proxy makes of docker run's create request,
// case by case (2.8.1's 610, 620, 630, 660, 680).
func TestRewriteCreate(t *testing.T) {
	const bind = "/opt/weave/weavewait:/w/w:ro"
	type want struct {
		Entrypoint, Cmd  []string
		Hostname, Domain string
		Binds, DNS, Srch []string
	}
	dnsOn := want{Hostname: "web", Domain: "weave.local", DNS: []string{"172.17.0.1"}, Srch: []string{"weave.local"}, Binds: []string{bind}}
	with := func(w want, f func(*want)) want { f(&w); return w }
	rows := []struct {
		name   string
		mod    func(*Config)
		cname  string
		body   string
		same   bool // passed on byte for byte
		want   want
		errHas string
	}{
		{name: "image entrypoint and cmd", cname: "web", body: `{"Image":"nginx"}`,
			want: with(dnsOn, func(w *want) {
				w.Entrypoint, w.Cmd = []string{"/w/w", "/docker-entrypoint.sh"}, []string{"nginx", "-g", "daemon off;"}
			})},
		{name: "given cmd keeps image entrypoint", cname: "web", body: `{"Image":"nginx","Cmd":["echo","hi"]}`,
			want: with(dnsOn, func(w *want) { w.Entrypoint, w.Cmd = []string{"/w/w", "/docker-entrypoint.sh"}, []string{"echo", "hi"} })},
		{name: "given entrypoint drops image cmd", cname: "web", body: `{"Image":"nginx","Entrypoint":["/bin/echo"]}`,
			want: with(dnsOn, func(w *want) { w.Entrypoint = []string{"/w/w", "/bin/echo"} })},
		{name: "empty entrypoint", cname: "web", body: `{"Image":"nginx","Entrypoint":[""],"Cmd":["ls"]}`,
			want: with(dnsOn, func(w *want) { w.Entrypoint, w.Cmd = []string{"/w/w"}, []string{"ls"} })},
		{name: "no double wrap", cname: "web", body: `{"Image":"busybox","Entrypoint":["/w/w"],"Cmd":["ls"],"HostConfig":{"Binds":["` + bind + `"]}}`,
			want: with(dnsOn, func(w *want) { w.Entrypoint, w.Cmd = []string{"/w/w"}, []string{"ls"} })},
		{name: "user binds, dns, hostname kept", cname: "web",
			body: `{"Image":"busybox","Hostname":"db","Domainname":"example.com","HostConfig":{"Binds":["/a:/b"],"Dns":["8.8.8.8"],"DnsSearch":["example.com"]}}`,
			want: want{Entrypoint: []string{"/w/w"}, Cmd: []string{"sh"}, Hostname: "db", Domain: "example.com",
				Binds: []string{"/a:/b", bind}, DNS: []string{"8.8.8.8"}, Srch: []string{"example.com"}}},
		{name: "net=host", body: `{"Image":"busybox","HostConfig":{"NetworkMode":"host"}}`, same: true},
		{name: "net=none", body: `{"Image":"busybox","HostConfig":{"NetworkMode":"none"}}`, same: true},
		{name: "net=container", body: `{"Image":"busybox","HostConfig":{"NetworkMode":"container:abc"}}`, same: true},
		{name: "plugin network", body: `{"Image":"busybox","HostConfig":{"NetworkMode":"weave"}}`, same: true},
		{name: "WEAVE_CIDR=none", body: `{"Image":"busybox","Env":["WEAVE_CIDR=none"]}`, same: true},
		{name: "no-default-ipalloc", mod: func(c *Config) { c.NoDefaultIPAM = true }, body: `{"Image":"busybox"}`, same: true},
		{name: "no-default-ipalloc with WEAVE_CIDR", mod: func(c *Config) { c.NoDefaultIPAM = true }, cname: "web",
			body: `{"Image":"busybox","Env":["WEAVE_CIDR=10.2.1.1/24"]}`, want: with(dnsOn, func(w *want) { w.Entrypoint, w.Cmd = []string{"/w/w"}, []string{"sh"} })},
		{name: "without-dns", mod: func(c *Config) { c.WithoutDNS = true }, cname: "web", body: `{"Image":"busybox"}`,
			want: want{Entrypoint: []string{"/w/w"}, Cmd: []string{"sh"}, Binds: []string{bind}}},
		{name: "hostname-match", mod: func(c *Config) { c.HostnameMatch, c.HostnameReplacement = `^aaa-(.*)-bbb$`, "db-$1" },
			cname: "aaa-one-bbb", body: `{"Image":"busybox"}`,
			want: with(dnsOn, func(w *want) { w.Entrypoint, w.Cmd, w.Hostname = []string{"/w/w"}, []string{"sh"}, "db-one" })},
		{name: "hostname-from-label", mod: func(c *Config) { c.HostnameFromLabel = "hostname" },
			cname: "ignored", body: `{"Image":"busybox","Labels":{"hostname":"fromlabel"}}`,
			want: with(dnsOn, func(w *want) { w.Entrypoint, w.Cmd, w.Hostname = []string{"/w/w"}, []string{"sh"}, "fromlabel" })},
		{name: "invalid derived hostname", cname: "under_score", body: `{"Image":"busybox"}`,
			want: with(dnsOn, func(w *want) { w.Entrypoint, w.Cmd, w.Hostname, w.Domain = []string{"/w/w"}, []string{"sh"}, "", "" })},
		{name: "bad WEAVE_CIDR", body: `{"Image":"busybox","Env":["WEAVE_CIDR=10.2.1.1"]}`, errHas: `"10.2.1.1" is not an IPv4 address/prefix`},
		{name: "unknown image", body: `{"Image":"nosuch"}`, errHas: "inspect image nosuch"},
		{name: "not JSON", body: `{"Image":`, errHas: "not a create request"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			p, _, _, _ := testProxy(t, r.mod)
			out, err := p.rewriteCreate(context.Background(), r.cname, []byte(r.body))
			if r.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), r.errHas) {
					t.Fatalf("error %v, want one containing %q", err, r.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.same {
				if string(out) != r.body {
					t.Fatalf("rewritten to %s; want it passed on unchanged", out)
				}
				return
			}
			var got struct {
				Entrypoint, Cmd      []string
				Hostname, Domainname string
				HostConfig           struct{ Binds, Dns, DnsSearch []string }
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			g := want{got.Entrypoint, got.Cmd, got.Hostname, got.Domainname, got.HostConfig.Binds, got.HostConfig.Dns, got.HostConfig.DnsSearch}
			if !reflect.DeepEqual(g, r.want) {
				t.Fatalf("got  %+v\nwant %+v\n(body %s)", g, r.want, out)
			}
		})
	}
}

// TestRewriteKeepsUnknownFields: fields our API types do not know (a newer
// API version's) reach dockerd as the client sent them.
func TestRewriteKeepsUnknownFields(t *testing.T) {
	p, _, _, _ := testProxy(t, nil)
	out, err := p.rewriteCreate(context.Background(), "web", []byte(`{"Image":"busybox","Future":{"x":[1,2]},"HostConfig":{"FutureHC":"y","Memory":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, w := range []string{`"Future":{"x":[1,2]}`, `"FutureHC":"y"`, `"Memory":0`} {
		if !strings.Contains(s, w) {
			t.Fatalf("%s lost from %s", w, s)
		}
	}
}

func TestParseCIDRs(t *testing.T) {
	got, err := parseCIDRs(" 10.2.1.1/24  ip:10.2.1.2/24 net:10.40.3.7/24 net:default ")
	if err != nil {
		t.Fatal(err)
	}
	want := []cidrSpec{
		{addr: netip.MustParsePrefix("10.2.1.1/24")}, {addr: netip.MustParsePrefix("10.2.1.2/24")},
		{addr: netip.MustParsePrefix("10.40.3.0/24"), allocate: true}, {allocate: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got, _ := parseCIDRs(""); !reflect.DeepEqual(got, []cidrSpec{{allocate: true}}) {
		t.Fatalf("empty WEAVE_CIDR: %+v, want net:default", got)
	}
	for _, bad := range []string{"10.2.1.1", "net:10.2/16", "fd00::1/64", "ip:", "bogus"} {
		if _, err := parseCIDRs(bad); err == nil || !strings.Contains(err.Error(), "WEAVE_CIDR") {
			t.Errorf("WEAVE_CIDR=%q: %v, want an error naming WEAVE_CIDR", bad, err)
		}
	}
}
