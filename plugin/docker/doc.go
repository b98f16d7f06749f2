// Package docker is weave's Docker network and IPAM plugin: libnetwork's
// legacy (v1) remote-driver protocol, HTTP over unix sockets, served by
// weaver itself when --plugin is set.
//
//	weave.sock      NetworkDriver, scope global, no IPAM
//	weavemesh.sock  NetworkDriver + IpamDriver, scope local
//
// Endpoints are veth pairs on the weave bridge (internal/netdev: host end
// vethwl<id> on the bridge, container end vethwg<id> that Docker moves
// into the sandbox as ethwe<N>); addresses come from the IPAM ring through
// the Allocator interface, in-process. The protocol's request and response
// types and the driver interfaces are those of
// github.com/docker/go-plugins-helpers (network, ipam); the HTTP dispatch
// is our own so that one socket can carry both drivers and every failure,
// malformed JSON included, gets libnetwork's {"Err": "..."} shape
// (docs/docker.md says why in full).
package docker
