// Package dns is weaveDNS: container names shared across the mesh and
// answered over DNS, wire-compatible with Weave Net 2.8.1.
//
// Every peer holds the same set of entries (hostname, origin peer,
// container ID, IPv4 address, version, tombstone), replicated as gossip on
// mesh channel "nameserver" in 2.8.1's encoding: a gob GossipData
// {Timestamp, Entries}. Entries only change at their origin: adding one
// (or reviving a tombstoned one), and deleting by tombstone (version+1).
// Replicas merge by higher version, then larger tombstone. Tombstones are
// purged after 30 minutes, gossip stamped more than 15 minutes from our
// clock is refused, entries of peers we do not know are ignored and those
// of peers that left the topology dropped. A peer that hears an entry
// about itself it disagrees with (say, from before a restart) re-asserts
// its own view with a higher version.
//
// Nameserver is the replica and the mesh Gossiper; Server answers DNS
// queries from it with github.com/miekg/dns (A and PTR in the weave
// domain, everything else forwarded upstream); Handler serves the HTTP
// /name routes and /status/dns. Registry is the small interface the
// daemon and the Docker plugin use to name containers.
package dns
