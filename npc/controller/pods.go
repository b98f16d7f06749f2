package controller

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/seedf75a49c6/weave/npc"
)

// podOf converts an API pod; ok is false for pods policies do not apply
// to: host-network pods, pods without an IPv4 address yet, finished pods.
func podOf(p *corev1.Pod, node string) (npc.Pod, bool) {
	if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return npc.Pod{}, false
	}
	ip, ok := podIPv4(p)
	if !ok {
		return npc.Pod{}, false
	}
	out := npc.Pod{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels, IP: ip, Local: p.Spec.NodeName == node}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == "" || cp.ContainerPort <= 0 || cp.ContainerPort > 65535 {
				continue
			}
			if proto, ok := protocol(cp.Protocol); ok {
				out.Ports = append(out.Ports, npc.ContainerPort{Name: cp.Name, Proto: proto, Port: uint16(cp.ContainerPort)})
			}
		}
	}
	return out, true
}

func podIPv4(p *corev1.Pod) (netip.Addr, bool) {
	ips := []string{p.Status.PodIP}
	for _, pi := range p.Status.PodIPs {
		ips = append(ips, pi.IP)
	}
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func protocol(p corev1.Protocol) (npc.Proto, bool) {
	switch p {
	case "", corev1.ProtocolTCP:
		return npc.TCP, true
	case corev1.ProtocolUDP:
		return npc.UDP, true
	case corev1.ProtocolSCTP:
		return npc.SCTP, true
	}
	return 0, false
}
