package e2e

import (
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestProbesOnPlainUnderlay checks the test's own multicast and garbage
// probes without weave, on the hosts' eth0 over the underlay bridge, so a
// failing e2e test points at the product, not at its probes.
func TestProbesOnPlainUnderlay(t *testing.T) {
	t.Parallel()
	netnstest.RequireRoot(t)
	if build.helperErr != nil {
		t.Fatalf("TestMain could not build the probes: %v", build.helperErr)
	}
	tp := netnstest.New(t, netnstest.Config{Hosts: 3})
	msg := "probe-" + tp.Prefix
	var recvs []*netnstest.Proc
	for _, i := range []int{2, 3} {
		p := tp.Start(tp.Host(i).NS, helper("mcast"), "recv", "-iface", "eth0", "-msg", msg, "-timeout", "10s")
		if err := p.WaitStderr("joined", 5*time.Second); err != nil {
			t.Fatalf("receiver on h%d: %v", i, err)
		}
		recvs = append(recvs, p)
	}
	tp.Start(tp.Host(1).NS, helper("mcast"), "send", "-iface", "eth0", "-msg", msg, "-count", "100", "-interval", "50ms")
	for n, p := range recvs {
		if err := p.Wait(15 * time.Second); err != nil {
			t.Fatalf("h%d did not receive the multicast probe: %v\n%s", n+2, err, p.Stderr())
		}
	}
	// With nothing listening, junk must still run to completion (refused
	// connections are reported, not fatal).
	if out, err := netnstest.Output(tp.Host(1).NS, helper("junk"), "-target", tp.Host(2).IP+":6783", "-rounds", "1"); err != nil {
		t.Fatalf("junk against a closed port: %v\n%s", err, out)
	}
}
