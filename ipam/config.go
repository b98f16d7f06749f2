package ipam

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/weaveworks/mesh"
)

// InitMode selects how the ring is first created (--ipalloc-init).
type InitMode int

// Init modes.
const (
	InitConsensus InitMode = iota // Paxos among electors (default)
	InitSeed                      // the listed peers seed the ring without voting
	InitObserver                  // never vote; wait for a ring from others
)

// Init is the parsed --ipalloc-init value.
type Init struct {
	Mode   InitMode
	Quorum uint            // consensus=N gives N/2+1; 0 = derive from Config.InitialPeerCount
	Seeds  []mesh.PeerName // seed=...
}

// ParseInit parses "consensus", "consensus=N", "seed=PEER,..." or "observer".
// An empty string means consensus.
func ParseInit(s string) (Init, error) {
	mode, arg, hasArg := strings.Cut(s, "=")
	switch mode {
	case "", "consensus":
		if !hasArg {
			return Init{Mode: InitConsensus}, nil
		}
		n, err := strconv.ParseUint(arg, 10, 16)
		if err != nil || n == 0 {
			return Init{}, fmt.Errorf("parse --ipalloc-init %q: consensus needs a positive peer count", s)
		}
		return Init{Mode: InitConsensus, Quorum: uint(n)/2 + 1}, nil
	case "seed":
		var seeds []mesh.PeerName
		for _, p := range strings.Split(arg, ",") {
			name, err := mesh.PeerNameFromUserInput(strings.TrimSpace(p))
			if err != nil || p == "" {
				return Init{}, fmt.Errorf("parse --ipalloc-init %q: bad peer name %q", s, p)
			}
			seeds = append(seeds, name)
		}
		return Init{Mode: InitSeed, Seeds: seeds}, nil
	case "observer":
		if hasArg {
			return Init{}, fmt.Errorf("parse --ipalloc-init %q: observer takes no value", s)
		}
		return Init{Mode: InitObserver}, nil
	}
	return Init{}, fmt.Errorf("parse --ipalloc-init %q: want consensus[=N], seed=PEER,... or observer", s)
}

// Clock is the time source the actor uses; tests inject a fake.
type Clock interface {
	Now() time.Time
	// NewTicker returns a channel ticking every d and a stop function.
	NewTicker(d time.Duration) (<-chan time.Time, func())
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// MinSubnetSize is the smallest subnet allocations may come from.
const MinSubnetSize = 4

// Config configures an Allocator.
type Config struct {
	OurName     mesh.PeerName // required
	OurUID      mesh.PeerUID  // required for consensus (Paxos node identity)
	OurNickname string        // shown in status; default: the peer name

	// Universe is --ipalloc-range. Default 10.32.0.0/12.
	Universe address.CIDR
	// DefaultSubnet is --ipalloc-default-subnet. Default: Universe.
	DefaultSubnet address.CIDR
	// Init is --ipalloc-init. Default: consensus over InitialPeerCount.
	Init Init
	// InitialPeerCount returns the number of peers expected at start
	// (targets + 1); used for the quorum when Init.Quorum is 0. Default 1.
	InitialPeerCount func() int
	// IsKnownPeer reports whether a peer is currently in the topology.
	// Default: every peer is considered known.
	IsKnownPeer func(mesh.PeerName) bool
	// PeerGone reports a peer IsKnownPeer still lists that the failure
	// detector holds dead and mesh no longer connects to (no connection of
	// ours, no route): rmpeer accepts it. PeerDropping reports a listed
	// peer that is about to leave the topology (held dead, or no route):
	// rmpeer refuses it with ErrPeerDropping, worth retrying within
	// seconds. Default: neither (rmpeer waits until mesh forgets the peer).
	PeerGone, PeerDropping func(mesh.PeerName) bool

	// ConsensusTimeout bounds how long an operation waits for the ring to
	// be created. Default 60s.
	ConsensusTimeout time.Duration
	// SpaceTimeout bounds how long an allocation waits for space from other
	// peers. Default 60s.
	SpaceTimeout time.Duration
	// TickInterval is how often pending work is retried. Default 5s (Weave's).
	TickInterval time.Duration
	// ClaimTries is how many space requests a claim of another peer's
	// address makes before failing. Default 5.
	ClaimTries int

	Clock  Clock        // default: wall clock
	Logger *slog.Logger // default: discard
	Rand   *rand.Rand   // donor choice; default: seeded from the clock
	Store  Store        // persistence; default none
	// CheckInvariants runs the ring and space invariant checks after every
	// action and panics on violation (tests). Default off.
	CheckInvariants bool
}

// DefaultConfig returns a Config with every default filled in except the
// peer identity (OurName, OurUID), which the caller must set.
func DefaultConfig() Config {
	var c Config
	c.OurName = 1 // placeholder so that the nickname default is computable
	c.setDefaults()
	c.OurName, c.OurNickname = 0, ""
	return c
}

// DefaultUniverse is the default --ipalloc-range.
var DefaultUniverse = address.MustParseCIDR("10.32.0.0/12")

func (c *Config) setDefaults() {
	if c.Universe == (address.CIDR{}) {
		c.Universe = DefaultUniverse
	}
	if c.DefaultSubnet == (address.CIDR{}) {
		c.DefaultSubnet = c.Universe
	}
	if c.OurNickname == "" {
		c.OurNickname = c.OurName.String()
	}
	if c.InitialPeerCount == nil {
		c.InitialPeerCount = func() int { return 1 }
	}
	if c.IsKnownPeer == nil {
		c.IsKnownPeer = func(mesh.PeerName) bool { return true }
	}
	if c.PeerGone == nil {
		c.PeerGone = func(mesh.PeerName) bool { return false }
	}
	if c.PeerDropping == nil {
		c.PeerDropping = func(mesh.PeerName) bool { return false }
	}
	c.ConsensusTimeout = orDefault(c.ConsensusTimeout, 60*time.Second)
	c.SpaceTimeout = orDefault(c.SpaceTimeout, 60*time.Second)
	c.TickInterval = orDefault(c.TickInterval, 5*time.Second)
	if c.ClaimTries == 0 {
		c.ClaimTries = 5
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Rand == nil {
		seed := uint64(c.Clock.Now().UnixNano())
		c.Rand = rand.New(rand.NewPCG(seed, uint64(c.OurName)))
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// ErrConfig marks an invalid configuration.
var ErrConfig = errors.New("invalid IPAM configuration")

// Validate checks the configuration after defaults are applied.
func (c *Config) Validate() error {
	if c.OurName == mesh.UnknownPeerName {
		return fmt.Errorf("validate: %w: peer name not set", ErrConfig)
	}
	if !c.Universe.IsSubnet() {
		return fmt.Errorf("validate --ipalloc-range %s: %w: not a network address (did you mean %s?)", c.Universe, ErrConfig, c.Universe.Network())
	}
	if c.Universe.Size() < MinSubnetSize || c.Universe.PrefixLen == 0 {
		return fmt.Errorf("validate --ipalloc-range %s: %w: must hold at least %d addresses", c.Universe, ErrConfig, MinSubnetSize)
	}
	if err := checkSubnet(c.DefaultSubnet); err != nil {
		return fmt.Errorf("validate --ipalloc-default-subnet: %w", err)
	}
	if !c.DefaultSubnet.Range().Overlaps(c.Universe.Range()) {
		return fmt.Errorf("validate --ipalloc-default-subnet %s: %w: outside --ipalloc-range %s", c.DefaultSubnet, ErrConfig, c.Universe)
	}
	if n := len(c.Init.Seeds); n > 0 && uint64(n) > uint64(c.Universe.Size()) {
		return fmt.Errorf("validate --ipalloc-range %s: %w: too small for %d seed peers", c.Universe, ErrConfig, n)
	}
	return nil
}

func checkSubnet(c address.CIDR) error {
	if !c.IsSubnet() {
		return fmt.Errorf("subnet %s: %w: not a network address (did you mean %s?)", c, ErrConfig, c.Network())
	}
	if c.Size() < MinSubnetSize || c.PrefixLen == 0 {
		return fmt.Errorf("subnet %s: %w: must hold at least %d addresses", c, ErrConfig, MinSubnetSize)
	}
	return nil
}
