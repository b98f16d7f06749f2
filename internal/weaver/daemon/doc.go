// Package daemon runs the weaver daemon: it wires the peer identity, the
// weave bridge and its iptables rules, the network router with the sleeve
// overlay, the mesh control plane, the AF_PACKET capture and the HTTP API
// together, and tears them down in reverse order when its context ends.
//
// It is Linux-only by design (bridge, iptables and AF_PACKET). The HTTP
// and status logic lives in the parent package weaver, which is tested
// with fakes; this package only adapts the real components to it.
package daemon
