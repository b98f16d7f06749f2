package ipam

import (
	"strings"
	"testing"
)

// TestStatusIdleUntilAsked: as in 2.8.1, a peer that was asked nothing is
// "idle" even while it votes in an election another peer started; the
// peer that asked shows the election and, with its peer connected and
// voting, does not say that peer must join.
func TestStatusIdleUntilAsked(t *testing.T) {
	n := newMemNet(t, 41)
	a := n.addPeer(1, consensus(5)) // quorum 3: two peers never reach it
	b := n.addPeer(2, consensus(5))
	if st := a.Status(); st.State != "idle" || st.Paxos != nil {
		t.Fatalf("before any request: %q paxos=%v", st.State, st.Paxos)
	}
	r := n.allocate(a, "c1", universe12)
	if r.err == nil {
		t.Fatal("allocated without a quorum")
	}
	if st := b.Status(); st.State != "idle" || st.Paxos != nil {
		t.Errorf("b (never asked, voting) = %q paxos=%v, want idle", st.State, st.Paxos)
	}
	st := a.Status()
	if !strings.HasPrefix(st.State, "awaiting consensus (quorum: 3, known: 2)") || st.Paxos == nil {
		t.Errorf("a = %q paxos=%v", st.State, st.Paxos)
	}
	if !strings.Contains(st.Problem, "1 more peer(s) must join") || strings.Contains(st.Problem, "2 more") {
		t.Errorf("a's problem %q: b is connected and voting, one more is missing", st.Problem)
	}
}

// TestShutdownSaysWhatItHandedOver: weave reset on a peer without space
// says nothing was handed over; with space it names the heir.
func TestShutdownSaysWhatItHandedOver(t *testing.T) {
	n := newMemNet(t, 42)
	idle := n.addPeer(1, consensus(1))
	if err := idle.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if st := idle.Status().State; st != "shut down: we owned no IP space, nothing handed over" {
		t.Errorf("reset of an idle peer: %q", st)
	}
	_, a, _, _ := threePeers(t, 43)
	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	st := a.Status().State
	if !strings.HasPrefix(st, "shut down: IP space handed over to ") || !strings.Contains(st, "(p") {
		t.Errorf("reset with space: %q", st)
	}
	_ = a.Shutdown() // a second reset keeps saying what the first did
	if again := a.Status().State; again != st {
		t.Errorf("second reset: %q, was %q", again, st)
	}
}
