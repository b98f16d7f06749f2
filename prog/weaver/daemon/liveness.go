package daemon

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	wmesh "github.com/weaveworks/mesh"

	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/liveness"
	"github.com/seedf75a49c6/weave/prog/weaver/httpapi"
)

const reclaimCheckInterval = 5 * time.Second

// startLiveness starts the memberlist failure detector (unless
// --no-liveness): it joins the peers mesh knows, tells the router which
// peers are dead, and, with --ipalloc-reclaim-after, reclaims their IPAM
// space. Call after startMesh.
func (d *daemon) startLiveness(ctx context.Context, b *backend) error {
	c := d.cfg
	if c.NoLiveness {
		return nil
	}
	adv := advertiseAddr(c)
	if adv == "" {
		d.log.Warn("liveness is off: this host has no address other peers could probe (no route towards a peer, no default route, no address but loopback); " +
			"dead peers are found by mesh's heartbeats only. Relaunch once the network is up, or give --host")
		return nil
	}
	lc := liveness.Config{
		Name: b.mesh.Ourself.Name.String(), BindAddr: livenessBind(c.Host, adv), Port: c.LivenessPort,
		AdvertiseAddr: adv, Logger: d.log,
		Seeds: liveness.MeshSeeds(b.mesh), OnChange: b.livenessChanged,
	}
	if c.Password != "" {
		lc.Password = []byte(c.Password)
	}
	// A dual-stack host (no --host) is a member of each family's liveness
	// membership: an IPv6-only peer cannot probe our IPv4 address, nor an
	// IPv4-only one our IPv6 address (docs/liveness.md, "Mixed underlay
	// families").
	if c.Host == "" && isIPv4(adv) {
		lc.AdvertiseAddr6 = advertiseAddr6(c)
	}
	det, err := liveness.NewGroup(lc)
	if err != nil && lc.AdvertiseAddr6 != "" {
		d.log.Warn("liveness runs over IPv4 only: cannot listen for both families", "port", c.LivenessPort, "err", err)
		lc.AdvertiseAddr6 = ""
		det, err = liveness.NewGroup(lc)
	}
	if err != nil { // the router runs on without it, as with --no-liveness
		d.log.Warn("liveness is off: dead peers are found by mesh's heartbeats only (fix --liveness-port or --host, or pass --no-liveness)",
			"port", c.LivenessPort, "err", err)
		return nil
	}
	b.live.Store(det)
	d.onStop(func() { _ = det.Close() })
	if c.IPAllocReclaimAfter > 0 && b.ipam != nil {
		r := liveness.NewReclaimer(reclaimConfig(c.IPAllocReclaimAfter, b), det)
		d.every(ctx, reclaimCheckInterval, func(now time.Time) { r.Tick(now) })
	}
	return nil
}

// advertiseAddr is --host, or else the source address towards the first
// initial peer: the address that peer's mesh sees us at. With neither,
// memberlist picks one of our private addresses.
func advertiseAddr(c Config) string {
	if c.Host != "" && c.Host != "0.0.0.0" {
		return c.Host
	}
	for _, p := range c.Peers {
		host := strings.TrimSuffix(strings.TrimPrefix(p, "["), "]") // [v6] without a port
		if h, _, err := net.SplitHostPort(p); err == nil {
			host = h
		}
		if ip := sourceAddrTowards(host, c.Port); ip != "" {
			return ip
		}
	}
	// No peers yet: the source address of the default route (the uplink),
	// not memberlist's first private address, which on a Docker host is
	// docker0's and unreachable from other hosts. 192.0.2.1 is a
	// documentation address; a UDP connect sends nothing.
	if ip := sourceAddrTowards("192.0.2.1", c.Port); ip != "" {
		return ip
	}
	// No default route either: any address but loopback, public ones too
	// (memberlist on its own takes only private ones).
	addrs, _ := net.InterfaceAddrs()
	if ip := firstUsableAddr(addrs, false); ip != "" {
		return ip
	}
	// No IPv4 at all (an IPv6-only underlay): the same in IPv6 terms;
	// liveness then listens on "::" (livenessBind). 2001:db8::1 is a
	// documentation address.
	if ip := sourceAddrTowards("2001:db8::1", c.Port); ip != "" {
		return ip
	}
	return firstUsableAddr(addrs, true)
}

// firstUsableAddr is the first global unicast address of addrs of one
// family, or "": loopback and link-local do not count (no peer can probe
// us there).
func firstUsableAddr(addrs []net.Addr, v6 bool) string {
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && (n.IP.To4() == nil) == v6 {
			return n.IP.String()
		}
	}
	return ""
}

// advertiseAddr6 is, on a host whose liveness advertises an IPv4 address,
// its IPv6 address for the IPv6 membership: the source address towards
// the first initial peer reachable over IPv6 (a literal or a name with an
// AAAA record), else that of the IPv6 default route, else the first
// global IPv6 address; "" when the host has none (IPv6 disabled, or
// link-local only): then it is a member of the IPv4 membership only.
func advertiseAddr6(c Config) string {
	for _, p := range c.Peers {
		host := strings.TrimSuffix(strings.TrimPrefix(p, "["), "]")
		if h, _, err := net.SplitHostPort(p); err == nil {
			host = h
		}
		if ip := sourceAddrVia("udp6", host, c.Port); usableIPv6(ip) {
			return ip
		}
	}
	if ip := sourceAddrVia("udp6", "2001:db8::1", c.Port); usableIPv6(ip) {
		return ip
	}
	addrs, _ := net.InterfaceAddrs()
	return firstUsableAddr(addrs, true)
}

func usableIPv6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && !a.Is4In6() && a.IsGlobalUnicast()
}

func isIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Unmap().Is4()
}

// livenessBind is where liveness listens: --host when given, else every
// address of the advertised address's family ("::" takes IPv4 too).
func livenessBind(host, adv string) string {
	if a, err := netip.ParseAddr(adv); host == "" && err == nil && a.Is6() && !a.Is4In6() {
		return "::"
	}
	return host
}

// sourceAddrTowards is the local address the kernel would use to reach
// host (a route lookup through a UDP connect; no packet is sent), or "".
func sourceAddrTowards(host string, port int) string { return sourceAddrVia("udp", host, port) }

// sourceAddrVia is sourceAddrTowards over network "udp", "udp4" or "udp6"
// (which resolves host to that family only).
func sourceAddrVia(network, host string, port int) string {
	conn, err := net.Dial(network, net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return ""
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP.String()
}

func reclaimConfig(after time.Duration, b *backend) liveness.ReclaimConfig {
	return liveness.ReclaimConfig{
		After: after, Us: b.mesh.Ourself.Name.String(), Logger: b.log,
		Holders: func() []string { return tokenHolders(b.ipam.Status()) },
		MeshKnows: func(p string) bool {
			name, err := wmesh.PeerNameFromString(p)
			return err == nil && b.mesh.Peers.Fetch(name) != nil
		},
		Takeover: func(p string) error {
			_, err := b.ipam.AdminTakeoverRanges(p)
			return err
		},
	}
}

func tokenHolders(s ipam.Status) []string {
	var out []string
	for _, e := range s.Entries {
		out = append(out, e.Peer)
	}
	return out
}

// livenessChanged feeds a transition to the router and remembers the
// peer's nickname for status lines once mesh has forgotten it.
func (b *backend) livenessChanged(c liveness.Change) {
	name, err := wmesh.PeerNameFromString(c.Peer)
	if err != nil {
		return
	}
	if p := b.mesh.Peers.Fetch(name); p != nil {
		b.nicks.Store(c.Peer, p.NickName)
	}
	switch c.To {
	case liveness.Dead:
		b.net.SetPeerDead(name, true)
		// One notion of dead: mesh drops the connection now instead of at
		// its 60 s heartbeat timeout, so routes, MAC entries, the overlay's
		// link and `weave status connections` follow within a gossip round,
		// mesh garbage-collects the peer once nobody reaches it, and the
		// connection maker redials an outbound target with its backoff.
		if b.mesh.Ourself.ShutdownConnectionTo(name, errDeclaredDead) {
			b.log.Info("closed the mesh connection to a peer declared dead", "peer", c.Peer)
		}
	case liveness.Alive:
		b.net.SetPeerDead(name, false)
	}
}

// errDeclaredDead is the reason a connection to a dead peer was closed
// (the target's last error in `weave status connections`).
var errDeclaredDead = errors.New("peer declared dead by liveness")

// livenessState is peer's state in the failure detector (Unknown with
// --no-liveness).
func (b *backend) livenessState(peer wmesh.PeerName) liveness.State {
	det := b.live.Load()
	if det == nil {
		return liveness.Unknown
	}
	return det.Get(peer.String()).State
}

// meshReaches reports whether we have a connection or a unicast route to
// peer.
func (b *backend) meshReaches(peer wmesh.PeerName) bool {
	if _, ok := b.mesh.Ourself.ConnectionTo(peer); ok {
		return true
	}
	_, ok := b.mesh.Routes.Unicast(peer)
	return ok
}

// peerGone and peerDropping are ipam.Config's PeerGone and PeerDropping:
// rmpeer accepts a peer held dead that mesh no longer reaches, and tells a
// caller to retry soon when the peer is suspect, held dead or unreachable
// but mesh still lists it (decided, and the connection closed, within a
// second or two).
func (b *backend) peerGone(peer wmesh.PeerName) bool {
	return b.livenessState(peer) == liveness.Dead && !b.meshReaches(peer)
}

func (b *backend) peerDropping(peer wmesh.PeerName) bool {
	s := b.livenessState(peer)
	return s == liveness.Dead || s == liveness.Suspect || !b.meshReaches(peer)
}

// addLiveness fills the report's liveness states and transition counts.
func (b *backend) addLiveness(rep *httpapi.Report) {
	det := b.live.Load()
	if det == nil {
		return
	}
	now := time.Now()
	rep.Router.Liveness = map[string]httpapi.PeerLiveness{}
	for _, s := range det.Peers() {
		nick, _ := b.nicks.Load(s.Peer)
		n, _ := nick.(string)
		rep.Router.Liveness[s.Peer] = httpapi.PeerLiveness{NickName: n, State: s.State.String(), Since: s.Since, For: now.Sub(s.Since)}
	}
	rep.LivenessTransitions = map[string]uint64{}
	for _, st := range []liveness.State{liveness.Alive, liveness.Suspect, liveness.Dead} {
		rep.LivenessTransitions[st.String()] = det.Transitions(st)
	}
}
