package dns

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
)

// fakeUpstream is a resolver on 127.0.0.1 answering example.com. A and the
// PTR of 192.0.2.1, standing in for the servers of resolv.conf.
func fakeUpstream(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	h := mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		switch {
		case q.Name == "example.com." && q.Qtype == mdns.TypeA:
			rr, _ := mdns.NewRR("example.com. 60 IN A 192.0.2.1")
			m.Answer = append(m.Answer, rr)
		case q.Name == "1.2.0.192.in-addr.arpa.":
			rr, _ := mdns.NewRR("1.2.0.192.in-addr.arpa. 60 IN PTR upstream.example.")
			m.Answer = append(m.Answer, rr)
		default:
			m.Rcode = mdns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	for _, srv := range []*mdns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		go func() { _ = srv.ActivateAndServe() }()
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return pc.LocalAddr().String()
}

func startServer(t *testing.T, zone Zone, upstream ...string) *Server {
	t.Helper()
	s, err := NewServer(zone, ServerConfig{ListenAddr: "127.0.0.1:0", Upstream: upstream,
		FallbackTimeout: 500 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func query(t *testing.T, srv, proto, name string, qtype uint16, edns uint16) *mdns.Msg {
	t.Helper()
	m := new(mdns.Msg)
	m.SetQuestion(name, qtype)
	if edns > 0 {
		m.SetEdns0(edns, false)
	}
	c := &mdns.Client{Net: proto, Timeout: 3 * time.Second, UDPSize: 65535}
	r, _, err := c.Exchange(m, srv)
	if err != nil {
		t.Fatalf("query %s %s over %s: %v", name, mdns.TypeToString[qtype], proto, err)
	}
	return r
}

func answers(r *mdns.Msg) []string {
	var out []string
	for _, rr := range r.Answer {
		switch v := rr.(type) {
		case *mdns.A:
			out = append(out, v.A.String())
		case *mdns.PTR:
			out = append(out, v.Ptr)
		}
	}
	return out
}

func zoneWith(t *testing.T, entries ...[3]string) *Nameserver {
	t.Helper()
	n, _ := newNS(t, peerA, &clock{t: time.Now()})
	for _, e := range entries {
		if err := n.AddEntry(e[0], e[1], ip(e[2])); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func TestServerAnswersOurNames(t *testing.T) {
	n := zoneWith(t, [3]string{"db.weave.local.", "c1", "10.32.0.1"}, [3]string{"Web.weave.local.", "c2", "10.32.0.2"},
		[3]string{"gone.weave.local.", "c3", "10.32.0.3"})
	_ = n.ContainerDied("c3")
	s := startServer(t, n, fakeUpstream(t))
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
		want  []string
	}{
		{"db.weave.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.32.0.1"}},
		{"DB.Weave.LOCAL.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.32.0.1"}},
		{"web.weave.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.32.0.2"}},
		{"db.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.32.0.1"}},
		{"db.weave.local.", mdns.TypeMX, mdns.RcodeSuccess, nil},
		{"nope.weave.local.", mdns.TypeA, mdns.RcodeNameError, nil},
		{"weave.local.", mdns.TypeA, mdns.RcodeSuccess, nil},
		{"db.weave.local.", mdns.TypeAAAA, mdns.RcodeSuccess, nil},
		{"gone.weave.local.", mdns.TypeA, mdns.RcodeNameError, nil},
		{"1.0.32.10.in-addr.arpa.", mdns.TypePTR, mdns.RcodeSuccess, []string{"db.weave.local."}},
		{"2.0.32.10.IN-ADDR.ARPA.", mdns.TypePTR, mdns.RcodeSuccess, []string{"Web.weave.local."}},
		{"1.2.0.192.in-addr.arpa.", mdns.TypePTR, mdns.RcodeSuccess, []string{"upstream.example."}},
		{"example.com.", mdns.TypeA, mdns.RcodeSuccess, []string{"192.0.2.1"}},
		{"unknown.example.", mdns.TypeA, mdns.RcodeNameError, nil},
	} {
		for _, proto := range []string{"udp", "tcp"} {
			r := query(t, s.Addr(), proto, tc.name, tc.qtype, 0)
			if r.Rcode != tc.rcode || !slices.Equal(answers(r), tc.want) {
				t.Errorf("%s %s over %s: rcode %s answers %v, want %s %v", tc.name, mdns.TypeToString[tc.qtype], proto,
					mdns.RcodeToString[r.Rcode], answers(r), mdns.RcodeToString[tc.rcode], tc.want)
			}
		}
	}
	if r := query(t, s.Addr(), "udp", "weave.local.", mdns.TypeSOA, 0); len(r.Answer) != 1 || r.Answer[0].Header().Rrtype != mdns.TypeSOA {
		t.Errorf("SOA at the apex: %v", r.Answer)
	}
	if r := query(t, s.Addr(), "udp", "nope.weave.local.", mdns.TypeA, 0); len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != mdns.TypeSOA {
		t.Errorf("NXDOMAIN without an SOA for negative caching: %v", r.Ns)
	}
	r := query(t, s.Addr(), "udp", "db.weave.local.", mdns.TypeA, 0)
	if !r.Authoritative || r.Answer[0].Header().Ttl != DefaultTTL {
		t.Errorf("answer not authoritative with TTL %d: %v", DefaultTTL, r)
	}
}

func TestServerRoundRobin(t *testing.T) {
	n := zoneWith(t, [3]string{"rr.weave.local.", "c1", "10.32.0.1"}, [3]string{"rr.weave.local.", "c2", "10.32.0.2"},
		[3]string{"rr.weave.local.", "c3", "10.32.0.3"})
	s := startServer(t, n)
	firsts := map[string]bool{}
	for range 30 {
		r := query(t, s.Addr(), "udp", "rr.weave.local.", mdns.TypeA, 0)
		if got := answers(r); len(got) != 3 {
			t.Fatalf("answers %v, want 3", got)
		} else {
			firsts[got[0]] = true
		}
	}
	if len(firsts) < 2 {
		t.Errorf("30 answers always began with %v: not shuffled", firsts)
	}
}

// 2.8.1's 295_dns_large_response: 50 addresses for one name.
func TestServerTruncation(t *testing.T) {
	n := zoneWith(t)
	for i := range 50 {
		_ = n.AddEntry("big.weave.local.", fmt.Sprintf("c%d", i), ip(fmt.Sprintf("10.32.1.%d", i+1)))
	}
	s := startServer(t, n)
	r := query(t, s.Addr(), "udp", "big.weave.local.", mdns.TypeA, 0)
	if !r.Truncated || len(r.Answer) == 0 || len(r.Answer) >= 50 {
		t.Errorf("plain UDP: TC=%v with %d answers, want truncated", r.Truncated, len(r.Answer))
	}
	r.Compress = true // as it travelled
	if b, _ := r.Pack(); len(b) > mdns.MinMsgSize {
		t.Errorf("plain UDP reply is %d bytes, over 512", len(b))
	}
	r = query(t, s.Addr(), "udp", "big.weave.local.", mdns.TypeA, 700)
	r.Compress = true
	if b, _ := r.Pack(); !r.Truncated || len(b) > 700 || r.IsEdns0() == nil {
		t.Errorf("EDNS0 700: TC=%v %d bytes OPT=%v", r.Truncated, len(b), r.IsEdns0() != nil)
	}
	for _, tc := range []struct {
		proto string
		edns  uint16
	}{{"udp", 4096}, {"tcp", 0}} {
		r = query(t, s.Addr(), tc.proto, "big.weave.local.", mdns.TypeA, tc.edns)
		if r.Truncated || len(r.Answer) != 50 {
			t.Errorf("%s (EDNS0 %d): TC=%v with %d answers, want all 50", tc.proto, tc.edns, r.Truncated, len(r.Answer))
		}
	}
}

func TestServerUpstreamDown(t *testing.T) {
	pc, _ := net.ListenPacket("udp", "127.0.0.1:0") // nobody answers here
	t.Cleanup(func() { _ = pc.Close() })
	s := startServer(t, zoneWith(t), pc.LocalAddr().String())
	if r := query(t, s.Addr(), "udp", "example.com.", mdns.TypeA, 0); r.Rcode != mdns.RcodeServerFailure {
		t.Errorf("rcode %s, want SERVFAIL", mdns.RcodeToString[r.Rcode])
	}
}

func TestUpstreamsFromResolvConf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	conf := "search example\nnameserver 172.17.0.1\nnameserver 127.0.0.11\nnameserver 192.0.2.53\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	for listen, want := range map[string][]string{
		"172.17.0.1:53":  {"127.0.0.11:53", "192.0.2.53:53"},
		"0.0.0.0:53":     {"172.17.0.1:53", "192.0.2.53:53"},
		"127.0.0.1:5353": {"172.17.0.1:53", "127.0.0.11:53", "192.0.2.53:53"},
	} {
		got, err := upstreams(path, listen)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("listen %s: upstreams %v (%v), want %v", listen, got, err, want)
		}
	}
	if _, err := upstreams(filepath.Join(t.TempDir(), "missing"), "127.0.0.1:53"); err == nil {
		t.Error("missing resolv.conf accepted")
	}
}
