package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestSleeveFramingBetweenOurRouters: two of our routers on an encrypted
// sleeve link (1500-byte underlay). With the default framing the link shows
// segments=true, and a 60000-byte ping with DF set crosses whole, its data
// intact, without one IP fragment on the underlay (h2's kernel reassembles
// nothing). With --sleeve-framing=jumbo it crosses as one datagram that the
// underlay fragments; with --sleeve-framing=weave (2.8.1's framing) it is
// refused with ICMP frag-needed while a path-MTU ping still crosses.
func TestSleeveFramingBetweenOurRouters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		framing    string
		attr       string // in `weave status connections`
		bigCrosses bool
		fragments  bool // h2's kernel reassembles the big ping
	}{
		{"segments", "segments=true", true, false},
		{"jumbo", "jumbo=true", true, true},
		{"weave", "mtu=1414", false, false},
	} {
		t.Run(tc.framing, func(t *testing.T) {
			t.Parallel()
			cl := newCluster(t, clusterOpts{hosts: 2, password: "s3cret-w34ve", extra: []string{"--sleeve-framing=" + tc.framing}})
			cl.waitEstablished(1, 2)
			cl.waitPing(1, 2)
			netnstest.WaitFor(t, establishTimeout, "h1's link shows "+tc.attr, func() error {
				_, out, err := cl.connections(1)
				if err != nil || !strings.Contains(out, tc.attr) {
					return fmt.Errorf("no %q in `weave status connections` (err %v):\n%s", tc.attr, err, out)
				}
				return nil
			})
			before := reasmOKs(t, cl.host(2).NS)
			c1, c2 := cl.container(1), cl.container(2)
			out, err := netnstest.Output(c1.NS, "ping", "-n", "-c", "3", "-W", "2", "-M", "do", "-s", "60000", c2.IP())
			switch {
			case tc.bigCrosses && (err != nil || !strings.Contains(out, " 0% packet loss") || strings.Contains(out, "wrong data")):
				t.Fatalf("60000-byte DF ping c1 -> c2 with %s framing: %v\n%s", tc.framing, err, out)
			case !tc.bigCrosses && err == nil:
				t.Fatalf("60000-byte DF ping crossed with %s framing; want frag-needed:\n%s", tc.framing, out)
			}
			if n := reasmOKs(t, cl.host(2).NS) - before; (n > 0) != tc.fragments {
				t.Fatalf("h2 reassembled %d IP datagrams during the big ping with %s framing, want fragments %v", n, tc.framing, tc.fragments)
			}
			if out, err := netnstest.Output(c1.NS, "ping", "-n", "-c", "2", "-W", "2", "-M", "do", "-s", "1300", c2.IP()); err != nil {
				t.Fatalf("1300-byte DF ping c1 -> c2: %v\n%s", err, out)
			}
		})
	}
}

// reasmOKs reads Ip ReasmOKs (IP datagrams reassembled) in namespace ns.
func reasmOKs(t *testing.T, ns string) int { return netnstest.SNMPCounter(t, ns, "Ip", "ReasmOKs") }
