package httpapi

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// The text formats below reproduce Weave Net 2.8.1's `weave status`
// outputs byte for byte (see docs/http-api.md), so scripts that parse them
// keep working.

// connectionStateOrder is the order Weave lists connection counts in.
var connectionStateOrder = []string{"established", "pending", "retrying", "failed", "connecting"}

// IPAMSummary is what the status text says about IPAM.
type IPAMSummary struct {
	Status        string
	Range         string
	DefaultSubnet string
}

// WriteStatus writes the text of GET /status. ipam is nil when IPAM is off.
func WriteStatus(w io.Writer, rep *Report, ipam *IPAMSummary) error {
	r := &rep.Router
	var b strings.Builder
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "%15s: %s\n", label, fmt.Sprintf(format, args...))
	}
	line("Version", "%s (version check update disabled)", rep.Version)
	b.WriteString("\n")
	line("Service", "router")
	line("Protocol", "%s", protocolString(r))
	line("Name", "%s(%s)", r.Name, r.NickName)
	line("Encryption", "%s", enabled(r.Encryption))
	line("PeerDiscovery", "%s", enabled(r.PeerDiscovery))
	line("Targets", "%d", len(r.Targets))
	line("Connections", "%d%s", len(r.Connections), parenthesised("", connectionCounts(r.Connections)))
	line("Peers", "%d%s", len(r.Peers), parenthesised("with ", peerConnectionCounts(r.Peers)))
	line("TrustedSubnets", "%s", trustedSubnets(r.TrustedSubnets))
	if ipam != nil {
		b.WriteString("\n")
		line("Service", "ipam")
		line("Status", "%s", ipam.Status)
		line("Range", "%s", ipam.Range)
		line("DefaultSubnet", "%s", ipam.DefaultSubnet)
	}
	if d := rep.DNSSummary; d != nil {
		b.WriteString("\n")
		line("Service", "dns")
		line("Domain", "%s", d.Domain)
		line("Upstream", "%s", strings.Join(d.Upstream, ", "))
		line("TTL", "%d", d.TTL)
		line("Entries", "%d", d.Entries)
	}
	if rep.Proxy != nil {
		b.WriteString("\n")
		line("Service", "proxy")
		for _, a := range rep.Proxy.Addresses {
			line("Address", "%s", a)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func protocolString(r *RouterReport) string {
	if r.ProtocolMinVersion == r.ProtocolMaxVersion {
		return fmt.Sprintf("%s %d", r.Protocol, r.ProtocolMinVersion)
	}
	return fmt.Sprintf("%s %d..%d", r.Protocol, r.ProtocolMinVersion, r.ProtocolMaxVersion)
}

func enabled(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

func trustedSubnets(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func parenthesised(prefix, counts string) string {
	if counts == "" {
		return ""
	}
	return " (" + prefix + counts + ")"
}

// connectionCounts renders "1 established, 2 connecting" in Weave's
// order; states Weave does not know come last, sorted.
func connectionCounts(conns []ConnectionReport) string {
	counts := map[string]int{}
	for _, c := range conns {
		counts[c.State]++
	}
	return formatCounts(counts, "")
}

func peerConnectionCounts(peers []PeerReport) string {
	counts := map[string]int{}
	for _, p := range peers {
		for _, c := range p.Connections {
			if c.Established {
				counts["established"]++
			} else {
				counts["pending"]++
			}
		}
	}
	return formatCounts(counts, " connections")
}

func formatCounts(counts map[string]int, suffix string) string {
	var parts []string
	for _, state := range connectionStateOrder {
		if n, ok := counts[state]; ok {
			parts = append(parts, fmt.Sprintf("%d %s", n, state))
			delete(counts, state)
		}
	}
	rest := make([]string, 0, len(counts))
	for state := range counts {
		rest = append(rest, state)
	}
	slices.Sort(rest)
	for _, state := range rest {
		parts = append(parts, fmt.Sprintf("%d %s", counts[state], state))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ") + suffix
}

// WriteConnections writes GET /status/connections: one line per local
// connection or target.
func WriteConnections(w io.Writer, r *RouterReport) error {
	var b strings.Builder
	for _, c := range r.Connections {
		fmt.Fprintf(&b, "%s %-21v %-11v %s %s\n", arrow(c.Outbound), c.Address, c.State, c.Info, attrString(c.Attrs))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func arrow(outbound bool) string {
	if outbound {
		return "->"
	}
	return "<-"
}

// attrString concatenates the attributes except "name", sorted by key,
// as "k=v" with no separator (Weave's format).
func attrString(attrs map[string]any) string {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		if k != "name" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%v", k, attrs[k])
	}
	return b.String()
}

// WritePeers writes GET /status/peers: each peer, then its connections.
// With liveness on, each peer line also says whether the peer is alive,
// suspect or dead and since when, and peers the mesh has forgotten but
// liveness holds dead follow the list.
func WritePeers(w io.Writer, r *RouterReport) error {
	var b strings.Builder
	listed := map[string]bool{}
	for _, p := range r.Peers {
		listed[p.Name] = true
		fmt.Fprintf(&b, "%s(%s)%s\n", p.Name, p.NickName, livenessSuffix(r.Liveness, p.Name))
		for _, c := range p.Connections {
			state := "pending"
			if c.Established {
				state = "established"
			}
			fmt.Fprintf(&b, "   %s %-21v %-37v %s\n", arrow(c.Outbound), c.Address, c.Name+"("+c.NickName+")", state)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Liveness)) {
		if !listed[name] {
			fmt.Fprintf(&b, "%s(%s)%s\n", name, r.Liveness[name].NickName, livenessSuffix(r.Liveness, name))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func livenessSuffix(l map[string]PeerLiveness, name string) string {
	pl, ok := l[name]
	if !ok {
		return ""
	}
	return fmt.Sprintf("  %s since %s (%s)", pl.State, pl.Since.UTC().Format("2006-01-02 15:04:05 UTC"),
		pl.For.Round(time.Second))
}

// WriteTargets writes GET /status/targets: one target per line.
func WriteTargets(w io.Writer, r *RouterReport) error {
	var b strings.Builder
	for _, t := range r.Targets {
		b.WriteString(t)
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
