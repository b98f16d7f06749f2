//go:build !linux

package fastdp

// UnderlayMTU returns 1500 off Linux, where the fast path is unavailable.
func UnderlayMTU(host string) (int, string) { return 1500, "" }
