package mesh

import (
	"errors"
	"strings"
	"testing"
	"time"

	wmesh "github.com/weaveworks/mesh"
)

// TestShutdownConnectionTo (patch hunk weave_liveness.go): closing our
// connection to a peer, as the daemon does when liveness declares it dead,
// removes it on both sides, records the reason as the dialling side's
// target error (what `weave status connections` shows), and the target
// is redialled with the connection maker's backoff. Without a connection
// it reports false.
func TestShutdownConnectionTo(t *testing.T) {
	a := startRouter(t, "02:00:00:00:0e:01", "a", nil)
	b := startRouter(t, "02:00:00:00:0e:02", "b", nil)
	if errs := a.ConnectionMaker.InitiateConnections([]string{b.addr()}, false); len(errs) > 0 {
		t.Fatal(errs)
	}
	connected := func(r *testRouter, to *testRouter) bool {
		c, ok := r.Ourself.ConnectionTo(to.Ourself.Name)
		return ok && c.Remote() != nil
	}
	waitFor(t, 10*time.Second, "a and b connected", func() bool { return connected(a, b) && connected(b, a) })
	reason := errors.New("peer declared dead by liveness")
	if !a.Ourself.ShutdownConnectionTo(b.Ourself.Name, reason) {
		t.Fatal("ShutdownConnectionTo found no connection to close")
	}
	waitFor(t, 5*time.Second, "a's status to show the reason on its target to b", func() bool {
		for _, c := range wmesh.NewStatus(a.Router).Connections {
			if strings.Contains(c.Info, reason.Error()) {
				return true
			}
		}
		return false
	})
	waitFor(t, 15*time.Second, "a to redial b", func() bool { return connected(a, b) && connected(b, a) })
	var nobody wmesh.PeerName = 0x020000000eff
	if a.Ourself.ShutdownConnectionTo(nobody, reason) {
		t.Fatal("ShutdownConnectionTo reported a connection to a peer we never met")
	}
}
