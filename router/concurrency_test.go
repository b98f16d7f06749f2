package router

import (
	"sync"
	"testing"
)

// TestConcurrentFramesAndStateChanges is meant for -race: frames flow on
// several goroutines while forwarder health flips and Status is read.
func TestConcurrentFramesAndStateChanges(t *testing.T) {
	tr := hotPathRouter(t)
	tr.inj.record = false
	uni := ethFrame(macRemote, macLocal, 0x0800, make([]byte, 64))
	bc := ethFrame(macBcast, MAC{0x02, 0, 0, 0, 0, 0x77}, 0x0806, make([]byte, 28))
	in := ethFrame(macLocal, macRemote, 0x0800, make([]byte, 64))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				switch (g + i) % 3 {
				case 0:
					tr.r.HandleCaptured(uni)
				case 1:
					tr.r.HandleCaptured(bc)
				default:
					tr.r.HandleForwarded(peerC, us, in)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			tr.fwds[peerB].health <- i%2 == 1
			_ = tr.r.Status()
		}
	})
	wg.Wait()
	if b, c := tr.counts(); b == 0 || c == 0 {
		t.Fatalf("no frames forwarded (%d/%d)", b, c)
	}
}
