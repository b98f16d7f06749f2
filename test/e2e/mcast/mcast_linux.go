package main

import (
	"errors"
	"syscall"
)

// setMulticastIf makes the socket send multicast out of interface index.
func setMulticastIf(c syscall.RawConn, index int) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptIPMreqn(int(fd), syscall.IPPROTO_IP, syscall.IP_MULTICAST_IF,
			&syscall.IPMreqn{Ifindex: int32(index)})
	})
	return errors.Join(err, serr)
}
