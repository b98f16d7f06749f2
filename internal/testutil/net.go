package testutil

import (
	"net"
	"testing"
)

// FreeLoopbackAddr returns a 127.0.0.1:port nothing listens on just now.
func FreeLoopbackAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
