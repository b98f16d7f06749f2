// Package e2e holds the end-to-end tests: real weaver routers, launched by
// the real `weave` script, in network-namespace hosts built by
// internal/netnstest, checked with ping, tcpdump, multicast probes and the
// routers' own status output. TestMain builds the binaries once. The tests
// need root; see docs/testing.md.
package e2e
