//go:build !linux

package main

import (
	"errors"
	"syscall"
)

// setMulticastIf is Linux-only; the e2e tests run on Linux.
func setMulticastIf(syscall.RawConn, int) error {
	return errors.New("choosing the multicast interface is only implemented on Linux")
}
