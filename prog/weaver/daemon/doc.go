// Package daemon is weaver's composition root: the typed configuration
// (Config, from the flags of prog/weaver), the pid file, and the start-up
// order that wires the peer identity, the weave bridge and its iptables
// rules, the network router with the fast path and the sleeve overlay, the
// mesh control plane, IPAM, the AF_PACKET capture and the HTTP API
// (prog/weaver/httpapi) together, tearing them down in reverse order when
// its context ends.
//
// It is the only package that imports every component; nothing imports
// it but the weaver command. It is Linux-only by design (bridge, iptables
// and AF_PACKET).
package daemon
