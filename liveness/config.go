package liveness

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/memberlist"
)

// DefaultPort is the UDP and TCP port liveness listens on unless told
// otherwise: next to mesh's 6783 and the fast path's 6784.
const DefaultPort = 6785

// Seed is one peer the mesh knows about, with an address to join it at.
type Seed struct {
	Name string // mesh peer name
	Host string // IP address (or host:port when the peer's port differs)
}

// Timing holds the failure detector's tuning. The zero value of a field
// takes the package default, chosen for hosts on one LAN: a killed peer is
// declared dead within a few seconds, while a peer losing a third of its
// packets is refuted before its suspicion times out (docs/liveness.md).
type Timing struct {
	ProbeInterval  time.Duration // how often each peer probes one other; default 400ms
	ProbeTimeout   time.Duration // direct probe round trip allowed; default 200ms
	SuspicionMult  int           // suspicion timeout = mult * log10(n) * interval; default 3
	GossipInterval time.Duration // default 200ms
	PollInterval   time.Duration // how often states are read from memberlist; default 100ms
	JoinInterval   time.Duration // how often unjoined seeds are retried at first; default 2s
	JoinBackoffMax time.Duration // cap on the per-seed retry backoff; default 60s
}

// Config configures a Detector.
type Config struct {
	Name          string // our mesh peer name; required
	BindAddr      string // address to listen on; default "0.0.0.0"
	Port          int    // UDP+TCP port, also the port seeds are joined at; default DefaultPort
	AdvertiseAddr string // address others reach us at; default: memberlist's choice
	// AdvertiseAddr6, for NewGroup on a dual-stack host, is our IPv6
	// address: AdvertiseAddr is then the IPv4 one, and each family gets a
	// detector of its own on one shared port (Group).
	AdvertiseAddr6 string
	// Password, when set, encrypts and authenticates every liveness packet
	// with a key derived from it; peers with another password are ignored.
	Password []byte
	Logger   *slog.Logger
	Timing   Timing
	// Seeds returns the peers to join; called every JoinInterval. Peers
	// already alive or suspect are skipped.
	Seeds func() []Seed
	// OnChange, when set, is called for every transition, in order, from
	// one goroutine; it must not block.
	OnChange func(Change)

	tr transport // set by NewGroup: one family's share of a dual-stack socket pair
}

func (t *Timing) fill() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.ProbeInterval, 400*time.Millisecond)
	def(&t.ProbeTimeout, 200*time.Millisecond)
	def(&t.GossipInterval, 200*time.Millisecond)
	def(&t.PollInterval, 100*time.Millisecond)
	def(&t.JoinInterval, 2*time.Second)
	def(&t.JoinBackoffMax, 60*time.Second)
	if t.SuspicionMult <= 0 {
		t.SuspicionMult = 3
	}
}

// keyContext separates the liveness key from any other use of the
// password (mesh derives its session keys differently).
const keyContext = "weave liveness v1\x00"

// DeriveKey turns a password into a 32-byte AES-256 key for memberlist.
func DeriveKey(password []byte) []byte {
	h := sha256.New()
	h.Write([]byte(keyContext))
	h.Write(password)
	return h.Sum(nil)
}

func (c *Config) memberlistConfig(d *Detector) (*memberlist.Config, error) {
	if c.Name == "" {
		return nil, fmt.Errorf("liveness: config has no peer name")
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name = c.Name
	mc.BindAddr = c.BindAddr
	mc.BindPort = c.Port
	mc.AdvertisePort = c.Port
	if c.AdvertiseAddr != "" {
		mc.AdvertiseAddr = c.AdvertiseAddr
	}
	t := c.Timing
	mc.ProbeInterval, mc.ProbeTimeout = t.ProbeInterval, t.ProbeTimeout
	mc.SuspicionMult, mc.GossipInterval = t.SuspicionMult, t.GossipInterval
	mc.Events, mc.Ping, mc.Alive = events{d}, events{d}, events{d}
	// Our messages are a few small alive/suspect/dead records: LZW saves
	// little on them and a new compressor per gossip packet cost the most
	// CPU of a 500-peer cluster's join. Compressed packets from others are
	// still read.
	mc.EnableCompression = false
	mc.Logger = newStdLogger(c.Logger, d.markSuspect)
	if len(c.Password) > 0 {
		mc.SecretKey = DeriveKey(c.Password)
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	return mc, nil
}

func (c *Config) fill() {
	if c.BindAddr == "" {
		c.BindAddr = "0.0.0.0"
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Seeds == nil {
		c.Seeds = func() []Seed { return nil }
	}
	c.Timing.fill()
}
