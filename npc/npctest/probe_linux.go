//go:build linux

// Package npctest holds test helpers for NetworkPolicy enforcement: TCP and
// UDP servers inside pod namespaces and probes that report whether a new
// connection got through. Tests only; no binary links it.
package npctest

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netns"
)

// Serve starts, inside the namespace at nsPath, a TCP server and a UDP echo
// server on every port given; they answer "ok" and stop at test end.
func Serve(t testing.TB, nsPath string, ports ...int) {
	t.Helper()
	for _, p := range ports {
		addr := ":" + strconv.Itoa(p)
		var ln net.Listener
		var pc net.PacketConn
		err := netns.Do(nsPath, func() error {
			var err error
			if ln, err = net.Listen("tcp4", addr); err != nil {
				return err
			}
			pc, err = net.ListenPacket("udp4", addr)
			return err
		})
		if err != nil {
			t.Fatalf("serve port %d in %s: %v", p, nsPath, err)
		}
		t.Cleanup(func() { ln.Close(); pc.Close() })
		go serveTCP(ln)
		go serveUDP(pc)
	}
}

func serveTCP(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte("ok"))
		_ = c.Close()
	}
}

func serveUDP(pc net.PacketConn) {
	buf := make([]byte, 64)
	for {
		_, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = pc.WriteTo([]byte("ok"), from)
	}
}

// Probe opens a new connection from the namespace at nsPath to dst:port
// over "tcp" or "udp" and reports whether the server's answer came back
// within timeout. A UDP probe uses a fresh source port, so conntrack sees a
// new flow each time.
func Probe(nsPath, proto, dst string, port int, timeout time.Duration) (bool, error) {
	var c net.Conn
	addr := net.JoinHostPort(dst, strconv.Itoa(port))
	err := netns.Do(nsPath, func() error {
		var err error
		c, err = net.DialTimeout(proto+"4", addr, timeout)
		return err
	})
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false, nil
		}
		return false, fmt.Errorf("dial %s %s from %s: %w", proto, addr, nsPath, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if proto == "udp" {
		if _, err := c.Write([]byte("hi")); err != nil {
			return false, fmt.Errorf("send udp to %s: %w", addr, err)
		}
	}
	buf := make([]byte, 2)
	n, err := c.Read(buf)
	return err == nil && string(buf[:n]) == "ok", nil
}
