// Package netnstest builds throw-away multi-host topologies out of Linux
// network namespaces for integration and end-to-end tests.
//
// A Topology has one underlay namespace holding a bridge (br0) and N host
// namespaces, each with eth0 (a veth into that bridge) at 192.168.100.N/24.
// Containers are further namespaces that the real `weave attach` command
// plugs into a host's weave bridge. Every namespace name embeds a per-test
// random prefix ("w" + 5 hex digits) and the PID of the creating process,
// so parallel tests never collide and a sweeper can remove what a killed
// test run left behind. All of it is removed in t.Cleanup, on failure too.
//
// The package needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); RequireRoot
// skips loudly when not root, except under CI=true, where it fails.
// The namespace code is Linux-only (files ending in _linux.go).
package netnstest
