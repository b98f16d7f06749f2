package kube

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// NodeAddress is the address weave dials for n, as 2.8.1's kube-utils chose
// it: the Node's IPv4 InternalIP, else its IPv4 ExternalIP; "" if neither.
func NodeAddress(n *corev1.Node) string {
	var internal, external string
	for _, a := range n.Status.Addresses {
		ip, err := netip.ParseAddr(a.Address)
		if err != nil || !ip.Unmap().Is4() {
			continue
		}
		switch a.Type {
		case corev1.NodeInternalIP:
			internal = ip.Unmap().String()
		case corev1.NodeExternalIP:
			external = ip.Unmap().String()
		}
	}
	if internal != "" {
		return internal
	}
	return external
}

// PeerSet is what the Node list says about the mesh.
type PeerSet struct {
	All    []string // every Node's address, sorted (consensus counts them)
	Others []string // All minus this host's own addresses: what weaver dials
}

// PeersFromNodes computes the peer set, leaving out Nodes without an
// address and the addresses isLocal reports as this host's.
func PeersFromNodes(nodes []*corev1.Node, isLocal func(string) bool) PeerSet {
	var s PeerSet
	for _, n := range nodes {
		addr := NodeAddress(n)
		if addr == "" {
			continue
		}
		s.All = append(s.All, addr)
		if !isLocal(addr) {
			s.Others = append(s.Others, addr)
		}
	}
	slices.Sort(s.All)
	s.All = slices.Compact(s.All)
	slices.Sort(s.Others)
	s.Others = slices.Compact(s.Others)
	return s
}

// LocalAddrs returns a test for the addresses of this host's (this network
// namespace's) interfaces.
func LocalAddrs() (func(string) bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list local addresses: %w", err)
	}
	local := map[string]bool{}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok {
				local[ip.Unmap().String()] = true
			}
		}
	}
	return func(addr string) bool { return local[addr] }, nil
}
