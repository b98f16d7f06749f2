//go:build !linux

package fastdp

// DetectUnderlay returns IPv4 over 1500 off Linux, where the fast path is
// unavailable.
func DetectUnderlay(host string) Underlay { return Underlay{MTU: 1500} }
