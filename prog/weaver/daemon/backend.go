package daemon

import (
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/seedf75a49c6/weave/dns"
	"github.com/seedf75a49c6/weave/internal/capture"
	"github.com/seedf75a49c6/weave/internal/netdev"
	"github.com/seedf75a49c6/weave/internal/version"
	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/liveness"
	"github.com/seedf75a49c6/weave/prog/weaver/httpapi"
	"github.com/seedf75a49c6/weave/router"
	wmesh "github.com/weaveworks/mesh"
)

// backend is the httpapi.Backend over the running components.
type backend struct {
	mesh    *wmesh.Router
	net     *router.NetworkRouter
	capture *capture.Handle
	dataDir string
	bridge  string
	// firewall holds the bridge's iptables rules and exposed addresses.
	firewall *netdev.Firewall
	log      *slog.Logger
	ready    atomic.Bool
	ipam     *ipam.Allocator // nil when IPAM is off
	// weaveDNS; both nil with --no-dns
	dns       *dns.Nameserver
	dnsServer *dns.Server
	live      atomic.Pointer[liveness.Group] // nil with --no-liveness
	nicks     sync.Map                       // peer name -> nickname, for liveness status
	page      *pageState                     // link summaries for the status page (page.go)
	// proxyAddrs are the Docker API proxy's listen addresses (nil when off);
	// set at start-up while the HTTP API already answers
	proxyAddrs atomic.Pointer[[]string]
}

var _ httpapi.Backend = (*backend)(nil)

func (b *backend) Report() httpapi.Report {
	rr := httpapi.RouterReportFromMesh(wmesh.NewStatus(b.mesh))
	st := b.capture.Stats()
	rr.CaptureStats = httpapi.CaptureStats{
		PacketsDropped:   st.PacketsDropped,
		PacketsIfDropped: st.PacketsIfDropped,
		PacketsReceived:  st.PacketsReceived,
	}
	for _, m := range b.net.Status().MACs {
		rr.MACs = append(rr.MACs, httpapi.MACReport{Mac: m.Mac, Name: m.Name, NickName: m.NickName, LastSeen: m.LastSeen})
	}
	rep := httpapi.Report{Ready: b.ready.Load(), Version: version.Version, Router: rr}
	rep.LinkTraffic = b.linkCounters(rr.OverlayDiagnostics, httpapi.LocalLinks(&rr)) // page.go
	if b.ipam != nil {
		addIPAM(&rep, b.ipam)
	}
	if b.dns != nil {
		addDNS(&rep, b.dns, b.dnsServer)
	}
	b.addLiveness(&rep)
	if a := b.proxyAddrs.Load(); a != nil {
		rep.Proxy = &httpapi.ProxyReport{Addresses: *a}
	}
	return rep
}

func (b *backend) Connect(peers []string, replace bool) []error {
	peers, errs := validTargets(peers)
	if len(errs) > 0 {
		return errs
	}
	errs = b.mesh.ConnectionMaker.InitiateConnections(peers, replace)
	b.persistTargets()
	return errs
}

func (b *backend) Forget(peers []string) error {
	b.mesh.ConnectionMaker.ForgetConnections(peers)
	b.persistTargets()
	return nil
}

// persistTargets saves the direct peers for --resume; a failure is logged,
// not returned, because the connection change itself succeeded.
func (b *backend) persistTargets() {
	if err := SaveTargets(b.dataDir, b.mesh.ConnectionMaker.Targets(false)); err != nil {
		b.log.Warn("cannot persist connection targets; --resume will miss them", "err", err)
	}
}

func (b *backend) Expose(addr netip.Prefix, skipNAT bool) error {
	expose := b.firewall.Expose
	if skipNAT {
		expose = b.firewall.ExposeWithoutNAT
	}
	if err := expose(addr); err != nil {
		return fmt.Errorf("expose %s on %s: %w", addr, b.bridge, err)
	}
	b.log.Info("exposed address on the bridge", "cidr", addr.String(), "bridge", b.bridge, "skipNAT", skipNAT)
	return nil
}
