package mesh

import (
	"net"
	"strconv"
	"testing"
	"time"

	wmesh "github.com/weaveworks/mesh"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// requireIPv6Loopback skips (fails under CI) where ::1 cannot be bound.
func requireIPv6Loopback(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		netnstest.SkipOrFail(t, "no IPv6 loopback here: "+err.Error())
	}
	l.Close()
}

// TestIPv6PeerForms: the patched connection maker takes the IPv6 forms a
// user types ([v6]:port, [v6], a bare v6 literal) and connects over an
// IPv6 TCP connection, whose address status shows bracketed; the
// library as pinned joined host and port with "%s:%s" and refused them.
func TestIPv6PeerForms(t *testing.T) {
	requireIPv6Loopback(t)
	a := startRouterOn(t, "", "02:00:00:00:6a:01", "a", []byte("pw"))
	b := startRouterOn(t, "", "02:00:00:00:6a:02", "b", []byte("pw"))
	if errs := a.ConnectionMaker.InitiateConnections([]string{"[::1]", "::1", "[::1]:" + strconv.Itoa(b.port)}, false); len(errs) != 0 {
		t.Fatalf("IPv6 peer forms refused: %v", errs)
	}
	waitFor(t, 10*time.Second, "a connected to b over IPv6", func() bool {
		for _, c := range wmesh.NewStatus(a.Router).Connections {
			if c.Address == "[::1]:"+strconv.Itoa(b.port) && c.State == "established" {
				return true
			}
		}
		return false
	})
	for _, bad := range []string{"[::1", "[::1]:x-y", "[]:6783"} {
		errs := a.ConnectionMaker.InitiateConnections([]string{bad}, false)
		if len(errs) != 1 {
			t.Errorf("InitiateConnections(%q) = %v, want one error", bad, errs)
		}
	}
}
