// Package liveness tells, for every peer that runs it, whether the peer is
// alive, suspect or dead, and since when. It is a thin wrapper around
// github.com/hashicorp/memberlist (SWIM with Lifeguard) on its own port
// (default 6785), joined through addresses the caller learns from the
// mesh, and encrypted with a key derived from the mesh password when one is
// set. It carries no state of its own: the mesh stays the only carrier of
// topology and IPAM; liveness only tells who is gone, fast.
//
// Peers that never joined (Weave 2.8.1 routers, or ours with liveness off)
// have no entry and are left to the mesh's own timeouts.
package liveness
