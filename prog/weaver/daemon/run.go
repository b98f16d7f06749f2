package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/seedf75a49c6/weave/dns"

	"github.com/seedf75a49c6/weave/internal/capture"
	"github.com/seedf75a49c6/weave/internal/netdev"
	"github.com/seedf75a49c6/weave/internal/pidfile"
	"github.com/seedf75a49c6/weave/internal/version"
	ourmesh "github.com/seedf75a49c6/weave/mesh"
	"github.com/seedf75a49c6/weave/prog/weaver/httpapi"
	"github.com/seedf75a49c6/weave/router"
	"github.com/seedf75a49c6/weave/sleeve"
	wmesh "github.com/weaveworks/mesh"
)

const (
	iptablesCheckInterval = 10 * time.Second // Weave's canary poll
	macMaxAge             = 10 * time.Minute
)

// daemon holds what Run built, for teardown in reverse order.
type daemon struct {
	cfg      Config
	log      *slog.Logger
	cleanups []func()
	wg       sync.WaitGroup
	pid      *pidfile.File    // released last, once everything is down
	mtu      int              // bridge (and fast path) MTU
	firewall *netdev.Firewall // the bridge's iptables rules and exposed addresses
	prior    priorState       // data dir contents before this launch
	ipamDB   ipamStore        // the IPAM database: ours, or 2.8.1's adopted
}

func (d *daemon) onStop(f func()) { d.cleanups = append(d.cleanups, f) }

func (d *daemon) teardown() {
	for i := len(d.cleanups) - 1; i >= 0; i-- {
		d.cleanups[i]()
	}
	d.wg.Wait()
	if d.pid != nil {
		if err := d.pid.Release(); err != nil {
			d.log.Warn("cannot remove pid file", "err", err)
		}
	}
}

// every calls f every interval, from a goroutine teardown joins, until ctx
// ends.
func (d *daemon) every(ctx context.Context, interval time.Duration, f func(now time.Time)) {
	d.spawn(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				f(now)
			}
		}
	})
}

// spawn starts a goroutine that teardown joins.
func (d *daemon) spawn(f func()) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		f()
	}()
}

// Run validates cfg, starts weaver and blocks until ctx is
// done, then shuts everything down in order and returns. The bridge is
// left in place (weave reset removes it); the pid file is removed.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (err error) {
	if err := cfg.Validate(); err != nil {
		return err
	}
	d := &daemon{cfg: cfg, log: log}
	ctx, cancel := context.WithCancel(ctx)
	d.onStop(cancel)
	defer d.teardown()

	if d.pid, err = pidfile.Acquire(cfg.RunDir); err != nil {
		return err
	}
	d.logUnimplemented()
	d.warnEmptyPassword()
	if ok, detail := ourmesh.PatchedLibrary(); !ok {
		log.Error("this weaver was built without weave's patch of the mesh library: one 34-byte message can take it to out-of-memory; build it with make (docs/mesh-patch.md)", "mesh", detail)
	}
	d.prior = capturePriorState(cfg)
	if err := checkPeerNameKept(cfg, d.prior); err != nil {
		return err
	}
	name, err := ResolvePeerName(cfg)
	if err != nil {
		return fmt.Errorf("load peer name from %s: %w", cfg.DataDir, err)
	}
	if err := consumePrintedMarker(cfg.DataDir); err != nil {
		return err
	}
	if d.ipamDB, err = chooseIPAMStore(cfg, name, log); err != nil {
		return err
	}
	d.prior.db = d.prior.db || d.ipamDB.adopted != nil
	log.Info("weaver starting", "version", version.Version, "peer", name.String(), "nickname", cfg.NickName)
	if err := d.setupHost(ctx, name); err != nil {
		return err
	}
	b, err := d.startDataPlane(name)
	if err != nil {
		return err
	}
	if err := d.startIPAM(b); err != nil {
		return err
	}
	if err := d.startDNS(b); err != nil {
		return err
	}
	if err := d.startLinkState(ctx, b); err != nil {
		return err
	}
	if err := d.startMesh(b); err != nil {
		return err
	}
	if err := d.startLiveness(ctx, b); err != nil {
		return err
	}
	d.runIPAMHousekeeping(ctx, b)
	d.runDNSHousekeeping(ctx, b)
	if err := d.startHTTP(b); err != nil {
		return err
	}
	if err := d.startPlugin(ctx, b); err != nil {
		return err
	}
	if err := d.startProxy(ctx, b); err != nil {
		return err
	}
	b.ready.Store(true)
	log.Info("weaver ready", "http", cfg.HTTPAddr, "status", cfg.StatusAddr)
	<-ctx.Done()
	log.Info("weaver shutting down")
	return nil
}

// warnEmptyPassword says once, at WARN, that an empty --password disabled
// encryption: it reads like a password was given.
func (d *daemon) warnEmptyPassword() {
	if d.cfg.PasswordSetEmpty {
		d.log.Warn("--password is empty: encryption is off, peer traffic is neither encrypted nor authenticated")
	}
}

func (d *daemon) logUnimplemented() {
	c := d.cfg
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"--datapath", c.Datapath != ""},
	} {
		if f.set {
			d.log.Info("flag accepted for compatibility but not implemented yet", "flag", f.name)
		}
	}
}

// setupHost creates the bridge (MAC = peer name) and the iptables rules,
// and starts the canary monitor.
func (d *daemon) setupHost(ctx context.Context, name wmesh.PeerName) error {
	mac, err := net.ParseMAC(name.String())
	if err != nil {
		return fmt.Errorf("parse peer name %s as MAC: %w", name, err)
	}
	d.mtu = d.bridgeMTU()
	bc := netdev.BridgeConfig{Name: d.cfg.Bridge, MAC: mac, MTU: d.mtu}
	if err := netdev.EnsureBridge(bc); err != nil {
		return fmt.Errorf("set up bridge %s: %w", d.cfg.Bridge, err)
	}
	d.firewall = netdev.NewFirewall(d.cfg.Bridge, "")
	if err := d.firewall.Ensure(); err != nil {
		return fmt.Errorf("set up iptables for %s: %w", d.cfg.Bridge, err)
	}
	d.spawn(func() { d.firewall.Monitor(ctx, iptablesCheckInterval, d.log) })
	if err := d.setupNPCGuard(); err != nil {
		return err
	}
	d.adoptWeave281Host()
	return nil
}

// setupNPCGuard closes the bridge to connections weave-npc has not allowed
// under --expect-npc, and removes a guard a previous run left otherwise.
func (d *daemon) setupNPCGuard() error {
	if !d.cfg.ExpectNPC {
		if err := netdev.RemoveNPCGuard(); err != nil {
			d.log.Debug("remove NetworkPolicy guard table", "err", err)
		}
		return nil
	}
	if err := netdev.EnsureNPCGuard(d.cfg.Bridge); err != nil {
		return fmt.Errorf("--expect-npc: %w", err)
	}
	d.log.Info("--expect-npc: new connections across the bridge need weave-npc's mark", "table", "inet "+netdev.NPCGuardTable)
	return nil
}

// startDataPlane builds sleeve, the network router, the mesh router and
// the capture socket, and starts the capture loop.
func (d *daemon) startDataPlane(name wmesh.PeerName) (*backend, error) {
	c := d.cfg
	fh := &router.LateHandler{}
	sl, err := sleeve.New(sleeve.Config{
		Host: c.Host, Port: c.Port, LocalPeer: name, Handler: fh,
		Logger: d.log.With("component", "sleeve"), PktDebug: c.PktDebug,
		NoSegments: c.SleeveFraming == "jumbo" || c.SleeveFraming == "weave", NoJumbo: c.SleeveFraming == "weave",
	})
	if err != nil {
		return nil, fmt.Errorf("start sleeve on port %d: %w", c.Port, err)
	}
	d.onStop(sl.Stop)
	ref := &meshRef{}
	overlays := append(d.fastPath(name, ref), sl)
	nr := router.NewNetworkRouter(router.Config{
		Logger: d.log.With("component", "router"), MACMaxAge: macMaxAge, PktDebug: c.PktDebug,
		BusyPoll: busyPoll(c.BusyPoll),
	}, overlays...)
	fh.Set(nr)
	d.onStop(nr.Stop)
	mr, err := wmesh.NewRouter(meshConfig(c), name, c.NickName, nr.MeshOverlay(),
		ourmesh.Logger(d.log))
	if err != nil {
		return nil, fmt.Errorf("create mesh router: %w", err)
	}
	ref.r.Store(mr)
	d.onStop(func() { _ = mr.Stop() })
	h, err := capture.Open(netdev.DefaultPcapIface)
	if err != nil {
		return nil, fmt.Errorf("open capture on %s: %w", netdev.DefaultPcapIface, err)
	}
	d.onStop(func() { _ = h.Close() })
	nr.Start(mr, h)
	d.spawn(func() {
		if err := h.Run(nr.HandleCaptured); err != nil {
			d.log.Error("capture stopped", "iface", netdev.DefaultPcapIface, "err", err)
		}
	})
	return &backend{mesh: mr, net: nr, capture: h, dataDir: c.DataDir, bridge: c.Bridge, firewall: d.firewall, log: d.log}, nil
}

func meshConfig(c Config) wmesh.Config {
	mc := wmesh.Config{
		Host: c.Host, Port: c.Port, ConnLimit: c.ConnLimit,
		ProtocolMinVersion: byte(c.MinProtocolVersion), PeerDiscovery: !c.NoDiscovery,
	}
	if c.Password != "" {
		mc.Password = []byte(c.Password)
	}
	for _, p := range c.TrustedSubnets {
		p = p.Masked()
		mc.TrustedSubnets = append(mc.TrustedSubnets, &net.IPNet{
			IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen()),
		})
	}
	return mc
}

// startMesh starts listening and connects to the initial peers.
func (d *daemon) startMesh(b *backend) (err error) {
	func() {
		// mesh panics when it cannot listen; turn that into an error.
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("start mesh on port %d: %v", d.cfg.Port, v)
			}
		}()
		b.mesh.Start()
	}()
	if err != nil {
		return err
	}
	peers := d.cfg.Peers
	if d.cfg.Resume {
		if peers, err = LoadTargets(d.cfg.DataDir); err != nil {
			return err
		}
		d.log.Info("resuming persisted connection targets", "count", len(peers))
	}
	if errs := b.Connect(peers, false); len(errs) > 0 {
		return fmt.Errorf("connect to initial peers: %w", errors.Join(errs...))
	}
	return nil
}

func (d *daemon) startHTTP(b *backend) error {
	api := httpapi.APIConfig{
		Backend: b, Logger: d.log.With("component", "http"),
		IPAM: d.cfg.IPAllocRange, IPAMDefaultSubnet: d.cfg.IPAllocDefaultSubnet,
		PProf: d.cfg.PProf,
	}
	if b.ipam != nil {
		api.IPAMHandler = b.ipam.Handler()
	}
	if b.dns != nil {
		api.DNSHandler = b.dns.Handler(dns.HTTPConfig{Server: b.dnsServer, IsAlive: d.containerAlive})
	}
	for _, l := range []struct {
		addr     string
		readOnly bool
		page     bool // the status page (read-only address only)
	}{{d.cfg.HTTPAddr, false, false}, {d.cfg.StatusAddr, true, true}, {d.cfg.MetricsAddr, true, false}} {
		if l.addr == "" {
			continue
		}
		api.ReadOnly = l.readOnly
		h := httpapi.NewAPIHandler(api)
		if l.page {
			h = httpapi.WithPage(h, httpapi.PageConfig{Source: b, Logger: api.Logger})
		}
		srv, err := httpapi.Serve(l.addr, h, d.log)
		if err != nil {
			return fmt.Errorf("start HTTP API: %w", err)
		}
		d.onStop(srv.Close)
	}
	return nil
}

// busyPoll maps --busy-poll (0 = off) to router.Config.BusyPoll (negative = off).
func busyPoll(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
