package cli

import (
	"net"
	"slices"
	"strings"
	"testing"

	mdns "github.com/miekg/dns"
)

func TestAttachRegistersNameAndDetachRemovesIt(t *testing.T) {
	h := newHarness(t)
	h.netns("c1")
	r := h.withRouter()
	r.set("GET /domain", 200, "weave.local.")
	r.set("PUT /name/c1/10.2.1.1", 204, "")
	r.set("DELETE /name/c1", 204, "")
	if code, _, errOut := h.run("attach", "10.2.1.1/24", "--name", "db", "c1"); code != 0 {
		t.Fatalf("attach --name: %d %q", code, errOut)
	}
	if !slices.Contains(r.got(), "PUT /name/c1/10.2.1.1 check-alive=true&fqdn=db.weave.local.") {
		t.Errorf("attach sent %q", r.got())
	}
	if code, _, errOut := h.run("detach", "c1"); code != 0 {
		t.Fatalf("detach: %d %q", code, errOut)
	}
	if !slices.Contains(r.got(), "DELETE /name/c1") {
		t.Errorf("detach sent %q", r.got())
	}
	// A name outside the domain is refused before anything is attached.
	h.netns("c2")
	code, _, errOut := h.run("attach", "10.2.1.2/24", "--name=db.example.com", "c2")
	if code == 0 || !strings.Contains(errOut, "not in the weaveDNS domain weave.local.") {
		t.Errorf("foreign name: %d %q", code, errOut)
	}
	if len(h.kernel.ifaces[h.cfg.NetnsDir+"/c2"]) != 0 {
		t.Error("c2 was attached despite the bad name")
	}
}

func TestDNSAddRemove(t *testing.T) {
	h := newHarness(t)
	h.netns("c1")
	r := h.withRouter()
	r.set("GET /domain", 200, "weave.local.")
	r.set("PUT /name/weave:extern/192.0.2.7", 204, "")
	r.set("PUT /name/c1/10.2.1.1", 204, "")
	r.set("DELETE /name/weave:extern/192.0.2.7", 204, "")
	r.set("DELETE /name/c1", 204, "")
	for _, args := range [][]string{
		{"dns-add", "192.0.2.7", "-h", "ext.weave.local."},
		{"dns-add", "10.2.1.1", "c1", "-h", "db"},
		{"dns-remove", "192.0.2.7", "-h", "ext"},
		{"dns-remove", "c1"},
	} {
		if code, _, errOut := h.run(args...); code != 0 {
			t.Errorf("%q: %d %q", args, code, errOut)
		}
	}
	want := []string{
		"GET /domain", "PUT /name/weave:extern/192.0.2.7 fqdn=ext.weave.local.",
		"GET /domain", "PUT /name/c1/10.2.1.1 fqdn=db.weave.local.",
		"GET /domain", "DELETE /name/weave:extern/192.0.2.7?fqdn=ext.weave.local.",
		"GET /domain", "DELETE /name/c1",
	}
	if !slices.Equal(r.got(), want) {
		t.Errorf("requests\n%q\nwant\n%q", r.got(), want)
	}
	for _, bad := range [][]string{{"dns-add"}, {"dns-add", "192.0.2.7"}, {"dns-add", "fd00::1", "-h", "x"}, {"dns-add", "c1", "c2"}} {
		if code, _, _ := h.run(bad...); code == 0 {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDNSVerbsWithoutDNS(t *testing.T) {
	h := newHarness(t)
	h.withRouter() // answers 404 everywhere, like a router with --no-dns
	for _, args := range [][]string{{"dns-add", "192.0.2.7", "-h", "x"}, {"dns-lookup", "x"}} {
		code, _, errOut := h.run(args...)
		if code == 0 || !strings.Contains(errOut, "weaveDNS is not running") {
			t.Errorf("%q: %d %q", args, code, errOut)
		}
	}
	if code, out, _ := h.run("dns-args"); code != 0 || out != "" {
		t.Errorf("dns-args without DNS: %d %q", code, out)
	}
}

func TestDNSLookup(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &mdns.Server{PacketConn: pc, Handler: mdns.HandlerFunc(func(w mdns.ResponseWriter, q *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(q)
		if q.Question[0].Name == "db.weave.local." {
			for _, a := range []string{"10.2.1.1", "10.2.1.2"} {
				rr, _ := mdns.NewRR("db.weave.local. 1 IN A " + a)
				m.Answer = append(m.Answer, rr)
			}
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	h := newHarness(t)
	r := h.withRouter()
	r.set("GET /dns-address-port", 200, pc.LocalAddr().String())
	code, out, errOut := h.run("dns-lookup", "db.weave.local")
	if code != 0 || out != "10.2.1.1\n10.2.1.2\n" {
		t.Errorf("dns-lookup: %d %q %q", code, out, errOut)
	}
}
