package e2e

import (
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

const dnsTimeout = 30 * time.Second

// dnsCluster is three hosts (h2, h3 dial h1) whose routers serve weaveDNS
// on every address; each host exposes 10.2.1.10N on its bridge, so its
// container cN (10.2.1.N, attached with --name cN) can reach it.
func dnsCluster(t *testing.T) *cluster {
	cl := newCluster(t, clusterOpts{hosts: 3, noLaunch: []int{1, 2, 3}})
	for i := 1; i <= 3; i++ {
		cl.launchDNS(i)
		cl.weave(i, "expose", fmt.Sprintf("10.2.1.%d/24", 100+i))
	}
	for i := 1; i <= 3; i++ {
		c := cl.tp.NewContainer(cl.host(i), fmt.Sprintf("c%d", i), fmt.Sprintf("10.2.1.%d/24", i))
		cl.c = append(cl.c, c)
		cl.weave(i, "attach", c.CIDR, "--name", c.Name, netnstest.NSPath(c.NS))
	}
	return cl
}

func (cl *cluster) launchDNS(i int) {
	cl.t.Helper()
	args := append([]string{"--dns-listen-address", "0.0.0.0:53", "--resolv-conf", ""}, cl.launchArgs(i)...)
	if _, err := cl.tp.StartRouter(cl.host(i), args...); err != nil {
		cl.t.Fatal(err)
	}
}

// resolve asks weaveDNS from inside container cI (its host's exposed
// address) for name's A records: the rcode and the sorted addresses.
func (cl *cluster) resolve(i int, name string) (int, []string, error) {
	var r *mdns.Msg
	server := net.JoinHostPort(fmt.Sprintf("10.2.1.%d", 100+i), "53")
	err := netns.Do(netnstest.NSPath(cl.container(i).NS), func() error {
		q := new(mdns.Msg)
		q.SetQuestion(mdns.Fqdn(name), mdns.TypeA)
		var err error
		r, _, err = (&mdns.Client{Timeout: 2 * time.Second}).Exchange(q, server)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	var ips []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*mdns.A); ok {
			ips = append(ips, a.A.String())
		}
	}
	slices.Sort(ips)
	return r.Rcode, ips, nil
}

// awaitResolves waits until cI gets exactly want for name (none = NXDOMAIN).
func (cl *cluster) awaitResolves(i int, name string, want ...string) {
	cl.t.Helper()
	netnstest.WaitFor(cl.t, dnsTimeout, fmt.Sprintf("c%d resolving %s to %v", i, name, want), func() error {
		rcode, ips, err := cl.resolve(i, name)
		switch {
		case err != nil:
			return err
		case want == nil && rcode != mdns.RcodeNameError:
			return fmt.Errorf("rcode %s, answers %v; want NXDOMAIN", mdns.RcodeToString[rcode], ips)
		case want != nil && !slices.Equal(ips, want):
			return fmt.Errorf("rcode %s, answers %v", mdns.RcodeToString[rcode], ips)
		}
		return nil
	})
}

// TestDNSAcrossHosts: containers on different hosts resolve each other by
// name through weaveDNS; weave status dns and dns-lookup show the records;
// a detach tombstones the name everywhere; a restarted router keeps its
// records (persisted in its data dir) and does not retract them; a
// container whose namespace disappears loses its name.
func TestDNSAcrossHosts(t *testing.T) {
	cl := dnsCluster(t)
	cl.waitEstablished(2, 1)
	cl.waitEstablished(3, 1)
	cl.awaitResolves(1, "c3.weave.local", "10.2.1.3")
	cl.awaitResolves(3, "c1.weave.local", "10.2.1.1")
	cl.awaitResolves(2, "C3.Weave.Local", "10.2.1.3") // any case
	cl.awaitResolves(1, "c2", "10.2.1.2")             // single label: our domain
	cl.awaitResolves(1, "nobody.weave.local")
	if out := cl.weave(3, "dns-lookup", "c2.weave.local"); out != "10.2.1.2\n" {
		t.Errorf("dns-lookup on h3 = %q", out)
	}
	status := cl.weave(2, "status", "dns")
	for i := 1; i <= 3; i++ {
		if !strings.Contains(status, fmt.Sprintf("c%d           10.2.1.%d ", i, i)) {
			t.Errorf("status dns on h2 lacks c%d:\n%s", i, status)
		}
	}
	// A detach tombstones c3's name; the tombstone reaches every host.
	cl.weave(3, "detach", netnstest.NSPath(cl.container(3).NS))
	cl.awaitResolves(1, "c3.weave.local")
	cl.awaitResolves(2, "c3.weave.local")

	// A restarted router keeps its records.
	{
		cl.weave(2, "stop")
		cl.launchDNS(2)
		if out := cl.weave(2, "dns-lookup", "c2.weave.local"); out != "10.2.1.2\n" {
			t.Errorf("h2 right after relaunch: dns-lookup c2 = %q", out)
		}
		cl.waitEstablished(2, 1)
		// A name added after the restart reaching h1 proves gossip flowed
		// again; c2 must still resolve there (not retracted by h2).
		cl.weave(2, "dns-add", "10.2.1.2", "-h", "again.weave.local")
		cl.awaitResolves(1, "again.weave.local", "10.2.1.2")
		cl.awaitResolves(1, "c2.weave.local", "10.2.1.2")
		cl.awaitResolves(2, "c1.weave.local", "10.2.1.1") // and relearns the others'
	}

	// A container that vanishes without detach (its namespace deleted)
	// loses its name: h1 checks attached namespaces every 15 s.
	if out, err := exec.Command("ip", "netns", "del", cl.container(1).NS).CombinedOutput(); err != nil {
		t.Fatalf("delete c1's namespace: %v\n%s", err, out)
	}
	cl.awaitResolves(2, "c1.weave.local")
}
