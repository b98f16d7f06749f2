package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/moby/moby/client"

	"github.com/seedf75a49c6/weave/dns"
	"github.com/seedf75a49c6/weave/dns/watch"
	"github.com/seedf75a49c6/weave/prog/weaver/httpapi"
	wmesh "github.com/weaveworks/mesh"
)

const (
	// DNSDBFile holds our own weaveDNS entries in the data dir, so a
	// restarted router keeps (and re-asserts) them.
	DNSDBFile = "weavedns.json"
	// DefaultDockerBridge is the bridge whose address weaveDNS listens on
	// by default, as `weave launch` passes --dns-listen-address.
	DefaultDockerBridge = "docker0"
)

// dnsListenAddress is --dns-listen-address, or 2.8.1's launch default:
// the Docker bridge's IPv4 address port 53; 127.0.0.1:53 without one.
func (c *Config) dnsListenAddress() string {
	if c.DNSListenAddress != "" {
		return c.DNSListenAddress
	}
	if ifc, err := net.InterfaceByName(orDefault(c.DockerBridge, DefaultDockerBridge)); err == nil {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				return net.JoinHostPort(n.IP.String(), "53")
			}
		}
	}
	return "127.0.0.1:53"
}

func (c *Config) validateDNS() error {
	if c.NoDNS {
		return nil
	}
	if c.DNSTTL < 0 || c.DNSTTL > 1<<31-1 {
		return fmt.Errorf("--dns-ttl: invalid value %d (want seconds >= 0)", c.DNSTTL)
	}
	if c.DNSFallbackTimeout < 0 {
		return fmt.Errorf("--dns-fallback-timeout: invalid value %s", c.DNSFallbackTimeout)
	}
	if a := c.DNSListenAddress; a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("--dns-listen-address: invalid address %q (want host:port)", a)
		}
	}
	return nil
}

// startDNS builds the nameserver on gossip channel "nameserver" (before
// the mesh starts, so no gossip is missed) and the DNS server. With
// --no-dns nothing runs and mesh relays the channel unread.
func (d *daemon) startDNS(b *backend) error {
	c := d.cfg
	if c.NoDNS {
		return nil
	}
	peers := b.mesh.Peers
	ns, err := dns.New(dns.Config{
		OurName: b.mesh.Ourself.Name, Domain: c.DNSDomain, Logger: d.log,
		IsKnownPeer: func(p wmesh.PeerName) bool { return peers.Fetch(p) != nil },
		StorePath:   filepath.Join(c.DataDir, DNSDBFile),
	})
	if err != nil {
		return fmt.Errorf("start weaveDNS: %w", err)
	}
	g, err := b.mesh.NewGossip(dns.ChannelName, ns)
	if err != nil {
		return fmt.Errorf("register weaveDNS gossip channel: %w", err)
	}
	ns.SetGossip(g)
	peers.OnGC(func(p *wmesh.Peer) { ns.PeerGone(p.Name) })
	ns.Start()
	d.onStop(ns.Stop)
	srv, err := dns.NewServer(ns, dns.ServerConfig{
		ListenAddr: c.dnsListenAddress(), TTL: uint32(c.DNSTTL), ResolvConf: c.ResolvConf,
		FallbackTimeout: c.DNSFallbackTimeout, Logger: d.log,
	})
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		return fmt.Errorf("start weaveDNS server: %w", err)
	}
	d.onStop(srv.Stop)
	b.dns, b.dnsServer = ns, srv
	return nil
}

// runDNSHousekeeping tombstones the names of attached containers whose
// namespace is gone, now and every deadContainerCheck.
func (d *daemon) runDNSHousekeeping(ctx context.Context, b *backend) {
	if b.dns == nil {
		return
	}
	d.pruneDeadNames(b.dns)
	d.startDockerNames(ctx, b.dns)
	d.every(ctx, deadContainerCheck, func(time.Time) { d.pruneDeadNames(b.dns) })
}

func (d *daemon) pruneDeadNames(ns *dns.Nameserver) {
	for _, r := range d.attachRecords() {
		if _, err := os.Stat(r.NetNS); errors.Is(err, os.ErrNotExist) && ns.HasLive(r.ID) {
			d.log.Info("container is gone; removing its DNS names", "container", r.ID)
			if err := ns.ContainerDied(r.ID); err != nil {
				d.log.Warn("tombstone DNS names of a dead container", "container", r.ID, "err", err)
			}
		}
	}
}

// containerAlive answers check-alive for containers `weave attach`
// recorded; others (Docker, CNI, weave:extern) count as alive.
func (d *daemon) containerAlive(id string) bool {
	for _, r := range d.attachRecords() {
		if r.ID == id {
			_, err := os.Stat(r.NetNS)
			return err == nil
		}
	}
	return true
}

// addDNS puts weaveDNS's state into a report.
func addDNS(rep *httpapi.Report, ns *dns.Nameserver, srv *dns.Server) {
	st := ns.Status(srv)
	rep.DNS = st
	rep.DNSSummary = &httpapi.DNSSummary{Domain: st.Domain, Upstream: st.Upstream, TTL: st.TTL,
		Entries: st.LiveCount(), OwnEntries: ns.LiveOwnCount()}
}

// startDockerNames names Docker containers on weave networks from the
// engine's events (dns/watch) when the Docker plugin runs, as 2.8.1's
// plugin watcher did.
func (d *daemon) startDockerNames(ctx context.Context, ns *dns.Nameserver) {
	if !d.cfg.Plugin || d.cfg.DockerAPI == "" {
		return
	}
	cl, err := client.New(client.WithHost(d.cfg.DockerAPI), client.WithAPIVersionNegotiation())
	if err == nil {
		var w *watch.Watcher
		if w, err = watch.New(watch.Config{Engine: cl, Registry: ns, Domain: ns.Domain(), Logger: d.log}); err == nil {
			d.onStop(func() { _ = cl.Close() })
			d.spawn(func() { w.Run(ctx) })
			return
		}
	}
	d.log.Warn("Docker containers will get no DNS names", "docker-api", d.cfg.DockerAPI, "err", err)
}
