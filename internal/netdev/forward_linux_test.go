//go:build linux

package netdev

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/capture"
	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestGratuitousARPOnAttach watches c2's ethwe while c1 is attached and
// expects c1's announcement: a broadcast ARP request from c1's MAC with
// sender IP = target IP = its address.
var bcastMAC = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func TestGratuitousARPOnAttach(t *testing.T) {
	host, bridge := hostWithBridge(t, 0)
	_, c1 := newContainerNS(t)
	_, c2 := newContainerNS(t)
	a1 := netip.MustParsePrefix("10.32.1.1/12")
	in(t, host, func() error {
		_, err := AttachContainer(AttachConfig{Bridge: bridge, NetNS: c2, Addrs: []netip.Prefix{netip.MustParsePrefix("10.32.1.2/12")}})
		return err
	})
	var h *capture.Handle
	in(t, c2, func() error {
		var err error
		h, err = capture.Open(DefaultContainerIf)
		return err
	})
	want := a1.Addr().As4()
	mac1 := net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x77}
	seen := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- h.Run(func(f []byte) {
			if len(f) >= 42 && binary.BigEndian.Uint16(f[12:14]) == 0x0806 && bytes.Equal(f[0:6], bcastMAC) &&
				binary.BigEndian.Uint16(f[20:22]) == 1 && bytes.Equal(f[22:28], mac1) &&
				bytes.Equal(f[28:32], want[:]) && bytes.Equal(f[38:42], want[:]) {
				select {
				case seen <- struct{}{}:
				default:
				}
			}
		})
	}()
	t.Cleanup(func() { h.Close(); <-done })
	in(t, host, func() error {
		_, err := AttachContainer(AttachConfig{Bridge: bridge, NetNS: c1, Addrs: []netip.Prefix{a1}, MAC: mac1})
		return err
	})
	select {
	case <-seen:
	case <-time.After(5 * time.Second):
		t.Fatal("no gratuitous ARP for 10.32.1.1 reached the other container")
	}
}

// TestForwardDropPolicy checks that with br_netfilter active and FORWARD
// policy DROP (a Docker host), containers on the bridge reach each other
// only once the Firewall has Ensured its rules.
func TestForwardDropPolicy(t *testing.T) {
	netnstest.RequireTools(t, "ping")
	host, bridge := hostWithBridge(t, 0)
	var nf string
	in(t, host, func() error {
		var err error
		nf, err = readSysctl("net/bridge/bridge-nf-call-iptables")
		return err
	})
	if nf != "1" {
		netnstest.SkipOrFail(t, fmt.Sprintf("br_netfilter not active in test namespaces (bridge-nf-call-iptables=%q; modprobe br_netfilter)", nf))
	}
	c1name, c1 := newContainerNS(t)
	_, c2 := newContainerNS(t)
	in(t, host, func() error {
		if _, err := AttachContainer(AttachConfig{Bridge: bridge, NetNS: c1, Addrs: []netip.Prefix{netip.MustParsePrefix("10.32.2.1/12")}}); err != nil {
			return err
		}
		_, err := AttachContainer(AttachConfig{Bridge: bridge, NetNS: c2, Addrs: []netip.Prefix{netip.MustParsePrefix("10.32.2.2/12")}})
		return err
	})
	if out, err := run(t, host, "iptables", "-P", "FORWARD", "DROP"); err != nil {
		t.Fatalf("set FORWARD policy: %v: %s", err, out)
	}
	ping := func() error {
		return exec.Command("ip", "netns", "exec", c1name, "ping", "-c1", "-W1", "10.32.2.2").Run()
	}
	if ping() == nil {
		t.Fatal("ping passed with FORWARD DROP and no rules: the test cannot show anything")
	}
	in(t, host, func() error { return NewFirewall(bridge, "").Ensure() })
	if err := ping(); err != nil {
		t.Fatalf("ping with FORWARD DROP after Firewall.Ensure: %v", err)
	}
}
