package dns

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	mdns "github.com/miekg/dns"
	"github.com/weaveworks/mesh"
)

const (
	// DefaultDomain is weaveDNS's domain unless --dns-domain says otherwise.
	DefaultDomain = "weave.local."
	// ChannelName is the mesh gossip channel, as in 2.8.1.
	ChannelName = "nameserver"
	// TombstoneTimeout is how long deletions are kept (and gossiped).
	TombstoneTimeout = 30 * time.Minute
	// GossipWindow is the clock skew beyond which gossip is refused: half
	// the tombstone lifetime, so a tombstone outlives any accepted skew.
	GossipWindow = TombstoneTimeout / 2
	// purgeInterval is how often expired tombstones are dropped.
	purgeInterval = time.Minute
)

// Registry names containers: what the daemon, `weave attach` and the
// Docker plugin need. *Nameserver implements it.
type Registry interface {
	// AddEntry registers fqdn -> addr for a container (or revives it).
	AddEntry(fqdn, containerID string, addr netip.Addr) error
	// ContainerDied tombstones every entry of the container.
	ContainerDied(containerID string) error
}

var _ Registry = (*Nameserver)(nil)

// Config configures a Nameserver.
type Config struct {
	OurName     mesh.PeerName
	Domain      string                   // default DefaultDomain
	IsKnownPeer func(mesh.PeerName) bool // nil = every peer is known
	StorePath   string                   // file for our own entries; "" = not persisted
	Now         func() time.Time         // default time.Now
	Logger      *slog.Logger             // default slog.Default()
}

// Nameserver is this peer's replica of the cluster's names and the
// Gossiper of channel "nameserver".
type Nameserver struct {
	cfg     Config
	domain  string
	log     *slog.Logger
	mu      sync.Mutex
	saveMu  sync.Mutex // orders writes of the store file
	entries Entries    // replica order (compareStored)
	gossip  mesh.Gossip
	stop    chan struct{}
	done    chan struct{}
}

// ErrNotInDomain reports a name outside the weaveDNS domain.
var ErrNotInDomain = errors.New("name is not in the weaveDNS domain")

// New builds a nameserver and loads our persisted entries.
func New(cfg Config) (*Nameserver, error) {
	if cfg.Domain == "" {
		cfg.Domain = DefaultDomain
	}
	if cfg.IsKnownPeer == nil {
		cfg.IsKnownPeer = func(mesh.PeerName) bool { return true }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	n := &Nameserver{cfg: cfg, domain: mdns.CanonicalName(cfg.Domain), log: cfg.Logger.With("component", "dns")}
	if _, ok := mdns.IsDomainName(n.domain); !ok {
		return nil, fmt.Errorf("invalid DNS domain %q", cfg.Domain)
	}
	own, err := loadEntries(cfg.StorePath, cfg.OurName)
	if err != nil {
		return nil, err
	}
	n.entries = own
	n.entries.normalize()
	return n, nil
}

// Domain returns the weaveDNS domain, fully qualified and lower-case.
func (n *Nameserver) Domain() string { return n.domain }

// SetGossip gives the nameserver its mesh channel (from Router.NewGossip).
func (n *Nameserver) SetGossip(g mesh.Gossip) {
	n.mu.Lock()
	n.gossip = g
	n.mu.Unlock()
}

func (n *Nameserver) now() int64 { return n.cfg.Now().Unix() }

// Start runs the tombstone purge until Stop.
func (n *Nameserver) Start() {
	n.stop, n.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(n.done)
		t := time.NewTicker(purgeInterval)
		defer t.Stop()
		for {
			select {
			case <-n.stop:
				return
			case <-t.C:
				n.PurgeTombstones()
			}
		}
	}()
}

// Stop ends the purge loop started by Start.
func (n *Nameserver) Stop() {
	if n.stop != nil {
		close(n.stop)
		<-n.done
		n.stop = nil
	}
}

// PurgeTombstones drops tombstones older than TombstoneTimeout.
func (n *Nameserver) PurgeTombstones() {
	cut := n.now() - int64(TombstoneTimeout/time.Second)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.entries.filter(func(e *Entry) bool { return e.Live() || e.Tombstone >= cut })
}

// qualify returns fqdn in canonical form, checking it is in our domain.
func (n *Nameserver) qualify(fqdn string) (string, error) {
	name := mdns.Fqdn(strings.TrimSpace(fqdn))
	if _, ok := mdns.IsDomainName(name); !ok || name == "." {
		return "", fmt.Errorf("invalid DNS name %q", fqdn)
	}
	if !mdns.IsSubDomain(n.domain, mdns.CanonicalName(name)) || mdns.CanonicalName(name) == n.domain {
		return "", fmt.Errorf("%w: %q is not under %s", ErrNotInDomain, fqdn, n.domain)
	}
	return name, nil
}

// AddEntry registers fqdn -> addr for containerID at our peer, or revives
// a tombstoned entry, and broadcasts it.
func (n *Nameserver) AddEntry(fqdn, containerID string, addr netip.Addr) error {
	name, err := n.qualify(fqdn)
	if err != nil {
		return err
	}
	if !addr.Is4() {
		return fmt.Errorf("weaveDNS address %s for %s: only IPv4 is supported", addr, name)
	}
	if containerID == "" {
		return fmt.Errorf("weaveDNS entry %s: empty container ID", name)
	}
	e := Entry{Hostname: name, ContainerID: containerID, Origin: n.cfg.OurName, Addr: addrUint(addr), lower: strings.ToLower(name)}
	n.mu.Lock()
	i, found := n.entries.find(&e)
	switch {
	case !found:
		n.entries = append(n.entries[:i], append(Entries{e}, n.entries[i:]...)...)
	case !n.entries[i].Live():
		n.entries[i].Tombstone = 0
		n.entries[i].Version++
	}
	e = n.entries[i]
	n.mu.Unlock()
	n.log.Info("adding entry", "container", containerID, "name", name, "addr", addr.String())
	return n.changed(Entries{e})
}

// changed persists our entries and broadcasts es.
func (n *Nameserver) changed(es Entries) error {
	if len(es) == 0 {
		return nil
	}
	n.saveMu.Lock()
	n.mu.Lock()
	own := n.ownLocked()
	g := n.gossip
	n.mu.Unlock()
	err := saveEntries(n.cfg.StorePath, n.cfg.OurName, own)
	n.saveMu.Unlock()
	if g != nil {
		g.GossipBroadcast(&GossipData{Timestamp: n.now(), Entries: es})
	}
	return err
}

func (n *Nameserver) ownLocked() Entries {
	var own Entries
	for _, e := range n.entries {
		if e.Origin == n.cfg.OurName {
			own = append(own, e)
		}
	}
	return own
}

// Match selects entries to delete: "" or "*" in a field matches anything.
type Match struct {
	Hostname, ContainerID string
	Addr                  netip.Addr // invalid = any
}

func (m Match) matches(e *Entry) bool {
	wild := func(s string) bool { return s == "" || s == "*" }
	return (wild(m.Hostname) || strings.EqualFold(mdns.Fqdn(m.Hostname), e.Hostname)) &&
		(wild(m.ContainerID) || m.ContainerID == e.ContainerID) &&
		(!m.Addr.IsValid() || addrUint(m.Addr) == e.Addr)
}

// Delete tombstones our live entries that m selects (only the origin may
// delete) and broadcasts the tombstones. It returns how many.
func (n *Nameserver) Delete(m Match) (int, error) {
	now := n.now()
	var dead Entries
	n.mu.Lock()
	for i := range n.entries {
		e := &n.entries[i]
		if e.Origin == n.cfg.OurName && e.Live() && m.matches(e) {
			e.Version++
			e.Tombstone = now
			dead = append(dead, *e)
		}
	}
	n.mu.Unlock()
	for _, e := range dead {
		n.log.Info("tombstoning entry", "container", e.ContainerID, "name", e.Hostname, "addr", e.IP().String())
	}
	return len(dead), n.changed(dead)
}

// ContainerDied tombstones every entry of the container.
func (n *Nameserver) ContainerDied(containerID string) error {
	if containerID == "" {
		return nil
	}
	_, err := n.Delete(Match{ContainerID: containerID})
	return err
}

// PeerGone drops the entries of a peer that left the topology.
func (n *Nameserver) PeerGone(p mesh.PeerName) {
	if p == n.cfg.OurName {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.entries.filter(func(e *Entry) bool { return e.Origin != p })
}

// Lookup returns the live addresses of name (any case), in replica order.
func (n *Nameserver) Lookup(name string) []netip.Addr {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []netip.Addr
	for _, e := range n.entries.lookup(mdns.Fqdn(name)) {
		if e.Live() {
			out = append(out, e.IP())
		}
	}
	return out
}

// ReverseLookup returns a live hostname of addr.
func (n *Nameserver) ReverseLookup(addr netip.Addr) (string, bool) {
	if !addr.Is4() {
		return "", false
	}
	a := addrUint(addr)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, e := range n.entries {
		if e.Live() && e.Addr == a {
			return e.Hostname, true
		}
	}
	return "", false
}

// Entries returns a copy of the replica (tombstones included).
func (n *Nameserver) Entries() []Entry {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Entry(nil), n.entries...)
}

// HasLive reports whether the container has a live entry of ours.
func (n *Nameserver) HasLive(containerID string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, e := range n.entries {
		if e.ContainerID == containerID && e.Origin == n.cfg.OurName && e.Live() {
			return true
		}
	}
	return false
}

// LiveOwnCount is the number of live entries that we originate.
func (n *Nameserver) LiveOwnCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, e := range n.entries {
		if e.Origin == n.cfg.OurName && e.Live() {
			c++
		}
	}
	return c
}
