package router

import "testing"

func TestDeadPeerGetsNothingAndLosesItsMACs(t *testing.T) {
	tr := newTestRouter(t)
	macC := MAC{0x02, 0, 0, 0, 0, 0x03}
	tr.r.HandleForwarded(peerC, us, ethFrame(macLocal, macC, 0x0800, []byte("from c")))
	tr.r.HandleCaptured(ethFrame(macC, macLocal, 0x0800, []byte("to c")))
	if b, _ := tr.counts(); b != 1 {
		t.Fatalf("before: %d forwards to B (C's next hop), want 1", b)
	}

	tr.r.SetPeerDead(peerC, true)
	if !tr.r.PeerDead(peerC) || tr.r.PeerDead(peerB) {
		t.Fatal("PeerDead does not reflect SetPeerDead")
	}
	if _, ok := tr.r.mac.Lookup(macC); ok {
		t.Fatal("C's MAC survived C being declared dead")
	}
	// C's MAC is now unknown: the frame floods, but not to C.
	tr.r.HandleCaptured(ethFrame(macC, macLocal, 0x0800, []byte("to c")))
	if b, c := tr.counts(); b != 2 || c != 0 {
		t.Fatalf("flood with C dead: B %d C %d forwards, want 2 and 0", b, c)
	}
	// A relayed unicast for C is dropped even though mesh still routes it.
	tr.r.HandleForwarded(peerB, peerC, ethFrame(macC, macRemote, 0x0800, []byte("relay")))
	if b, _ := tr.counts(); b != 2 {
		t.Fatalf("relay to dead C went out: %d forwards to B", b)
	}

	tr.r.SetPeerDead(peerC, false)
	tr.r.HandleCaptured(ethFrame(macBcast, macLocal, 0x0806, []byte("arp")))
	if _, c := tr.counts(); c != 1 {
		t.Fatalf("C alive again but got %d broadcasts, want 1", c)
	}
}

func TestDeadHopDropsUnicastThroughIt(t *testing.T) {
	tr := newTestRouter(t)
	macC := MAC{0x02, 0, 0, 0, 0, 0x03}
	tr.r.HandleForwarded(peerC, us, ethFrame(macLocal, macC, 0x0800, []byte("from c")))
	tr.r.SetPeerDead(peerB, true) // C's next hop
	tr.r.HandleCaptured(ethFrame(macC, macLocal, 0x0800, []byte("to c")))
	if b, c := tr.counts(); b != 0 || c != 0 {
		t.Fatalf("sent via dead hop B: B %d C %d", b, c)
	}
}
