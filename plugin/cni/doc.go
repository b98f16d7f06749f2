// Package cni is the CNI plugin pair of weave: weave-net, the network
// plugin, and weave-ipam, the IPAM plugin (CNI spec 1.1, and the older
// versions the CNI library converts results to).
//
// Both are thin clients of the weave router's HTTP API (internal/api):
// addresses come from the router's IPAM under an ident of the container
// ID and interface name (the bare container ID for eth0, the ident Weave
// Net 2.8.1's plugin used for every attachment). weave-net also plumbs the
// container: a veth whose host end joins the weave bridge (internal/netdev)
// and whose other end becomes CNI_IFNAME in the container, with the
// default route via the bridge's address in the container's subnet.
//
// Every attachment this plugin makes is recorded in a small file under
// the configured dataDir; GC only ever releases what those records name,
// so addresses that `weave attach`, Docker or other hosts hold in the
// shared IPAM are never touched. Errors reach the runtime as CNI error
// objects (pkg/skel prints them).
package cni
