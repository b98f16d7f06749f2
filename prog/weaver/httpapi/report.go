package httpapi

import (
	"time"

	wmesh "github.com/weaveworks/mesh"
)

// Report is the JSON document of GET /report, shaped like Weave Net
// 2.8.1's WeaveStatus so that `weave report` consumers keep working.
// Subsystems that do not exist yet (IPAM, DNS, proxy, plugin) are nil and
// omitted, as Weave omits them when disabled.
type Report struct {
	Ready        bool
	Version      string
	VersionCheck VersionCheck
	Router       RouterReport
	IPAM         any          `json:",omitempty"`
	DNS          any          `json:",omitempty"`
	Proxy        *ProxyReport `json:",omitempty"`

	// IPAMSummary feeds the ipam section of `weave status` and IPAMMetrics
	// the weave_ips / weave_ipam_* gauges; both nil when IPAM is off. They
	// are not part of Weave's JSON.
	IPAMSummary *IPAMSummary `json:"-"`
	IPAMMetrics *IPAMMetrics `json:"-"`
	// DNSSummary feeds the dns section of `weave status` and the
	// weave_dns_entries gauge; nil with --no-dns.
	DNSSummary *DNSSummary `json:"-"`
	// LivenessTransitions counts peers entering each liveness state
	// ("alive", "suspect", "dead"); nil with --no-liveness.
	LivenessTransitions map[string]uint64 `json:"-"`
	// LinkTraffic is each link's counters by remote peer name
	// (weave_link_*_total; metrics_links.go).
	LinkTraffic map[string]LinkTraffic `json:"-"`
}

// ProxyReport is 2.8.1's Proxy section: the Docker API proxy's listen
// addresses (GET /proxyaddrs, weave env).
type ProxyReport struct {
	Addresses []string
}

// DNSSummary is what the status text and metrics say about weaveDNS.
type DNSSummary struct {
	Domain     string
	Upstream   []string
	TTL        uint32
	Entries    int // live entries of the whole cluster
	OwnEntries int // live entries this peer originates (weave_dns_entries)
}

// IPAMMetrics are the allocator's Prometheus gauges, as Weave 2.8.1 names them.
type IPAMMetrics struct {
	LocalUsed          int     // weave_ips{state="local-used"}
	MaxIPs             int     // weave_max_ips: size of the range
	PendingAllocates   int     // weave_ipam_pending_allocates
	PendingClaims      int     // weave_ipam_pending_claims
	UnreachableCount   int     // weave_ipam_unreachable_count
	UnreachablePercent float64 // weave_ipam_unreachable_percentage
	Conflicts          int     // weave_ipam_conflicts (ours): addresses held twice after a heal
	ConflictsSeen      uint64  // conflicts since the start; the gauge is written once there was one
}

// VersionCheck is always disabled: weaver never phones home.
type VersionCheck struct {
	Enabled     bool
	Success     bool
	NewVersion  string
	NextCheckAt time.Time
}

// RouterReport is mesh's Status plus the network router's fields, in the
// order Weave prints them.
type RouterReport struct {
	Protocol           string
	ProtocolMinVersion int
	ProtocolMaxVersion int
	Encryption         bool
	PeerDiscovery      bool
	Name               string
	NickName           string
	Port               int
	Peers              []PeerReport
	UnicastRoutes      []UnicastRoute
	BroadcastRoutes    []BroadcastRoute
	Connections        []ConnectionReport
	TerminationCount   int
	Targets            []string
	OverlayDiagnostics any
	TrustedSubnets     []string
	Interface          string
	CaptureStats       CaptureStats
	MACs               []MACReport
	// Liveness is each peer's state as the liveness detector sees it, by
	// peer name (ours; absent with --no-liveness).
	Liveness map[string]PeerLiveness `json:",omitempty"`
}

// PeerLiveness is one peer's liveness (alive, suspect, dead) and since
// when; For is the time since then, at report time.
type PeerLiveness struct {
	NickName string
	State    string
	Since    time.Time
	For      time.Duration
}

// PeerReport is one peer of the topology.
type PeerReport struct {
	Name        string
	NickName    string
	UID         wmesh.PeerUID
	ShortID     wmesh.PeerShortID
	Version     uint64
	Connections []PeerConnection
}

// PeerConnection is one connection of a peer as the topology knows it.
type PeerConnection struct {
	Name        string
	NickName    string
	Address     string
	Outbound    bool
	Established bool
}

// UnicastRoute is one unicast route: to Dest via the neighbour Via.
type UnicastRoute struct {
	Dest, Via string
}

// BroadcastRoute lists the neighbours a broadcast from Source goes to.
type BroadcastRoute struct {
	Source string
	Via    []string
}

// ConnectionReport is one local connection or connection target.
type ConnectionReport struct {
	Address  string
	Outbound bool
	State    string
	Info     string
	Attrs    map[string]any
}

// CaptureStats are the capture counters; fields are in Weave's
// (alphabetical) order.
type CaptureStats struct {
	PacketsDropped   uint64
	PacketsIfDropped uint64
	PacketsReceived  uint64
}

// CaptureInterface is what the report shows as Router.Interface.
const CaptureInterface = "vethwe-pcap (via AF_PACKET)"

// RouterReportFromMesh converts a mesh status snapshot.
func RouterReportFromMesh(s *wmesh.Status) RouterReport {
	r := RouterReport{
		Protocol:           s.Protocol,
		ProtocolMinVersion: s.ProtocolMinVersion,
		ProtocolMaxVersion: s.ProtocolMaxVersion,
		Encryption:         s.Encryption,
		PeerDiscovery:      s.PeerDiscovery,
		Name:               s.Name,
		NickName:           s.NickName,
		Port:               s.Port,
		TerminationCount:   s.TerminationCount,
		Targets:            s.Targets,
		OverlayDiagnostics: s.OverlayDiagnostics,
		TrustedSubnets:     s.TrustedSubnets,
		Interface:          CaptureInterface,
	}
	for _, p := range s.Peers {
		pr := PeerReport{Name: p.Name, NickName: p.NickName, UID: p.UID, ShortID: p.ShortID, Version: p.Version}
		for _, c := range p.Connections {
			pr.Connections = append(pr.Connections, PeerConnection{
				Name: c.Name, NickName: c.NickName, Address: c.Address,
				Outbound: c.Outbound, Established: c.Established,
			})
		}
		r.Peers = append(r.Peers, pr)
	}
	for _, u := range s.UnicastRoutes {
		r.UnicastRoutes = append(r.UnicastRoutes, UnicastRoute{Dest: u.Dest, Via: u.Via})
	}
	for _, b := range s.BroadcastRoutes {
		r.BroadcastRoutes = append(r.BroadcastRoutes, BroadcastRoute{Source: b.Source, Via: b.Via})
	}
	for _, c := range s.Connections {
		r.Connections = append(r.Connections, ConnectionReport(c))
	}
	if r.TrustedSubnets == nil {
		r.TrustedSubnets = []string{}
	}
	return r
}

// MACReport is one entry of the router's MAC cache.
type MACReport struct {
	Mac      string
	Name     string
	NickName string
	LastSeen time.Time
}
