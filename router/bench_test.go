package router

import (
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/testutil"
	"github.com/weaveworks/mesh"
)

func hotPathRouter(tb testing.TB) *testRouter {
	tr := newTestRouter(tb)
	tr.inj.record = false
	// macRemote behind C.
	tr.r.HandleForwarded(peerC, us, ethFrame(macLocal, macRemote, 0x0800, nil))
	return tr
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("SKIPPING under -race: allocation counts are not meaningful there; make test runs this in its race-free pass")
	}
	tr := hotPathRouter(t)
	uni := ethFrame(macRemote, macLocal, 0x0800, make([]byte, 1400))
	bc := ethFrame(macBcast, macLocal, 0x0806, make([]byte, 28))
	fwdIn := ethFrame(macLocal, macRemote, 0x0800, make([]byte, 1400))
	relay := ethFrame(macRemote, macLocal, 0x0800, make([]byte, 1400))
	for name, fn := range map[string]func(){
		"captured unicast":   func() { tr.r.HandleCaptured(uni) },
		"captured broadcast": func() { tr.r.HandleCaptured(bc) },
		"forwarded inject":   func() { tr.r.HandleForwarded(peerC, us, fwdIn) },
		"forwarded relay":    func() { tr.r.HandleForwarded(peerB, mesh.PeerName(peerC), relay) },
	} {
		if n := testing.AllocsPerRun(1000, fn); n != 0 {
			t.Errorf("%s: %v allocs per frame, want 0", name, n)
		}
	}
	if b, c := tr.counts(); b == 0 || c == 0 {
		t.Fatalf("frames were not forwarded (%d/%d)", b, c)
	}
}

func BenchmarkHandleCapturedUnicast(b *testing.B) {
	tr := hotPathRouter(b)
	f := ethFrame(macRemote, macLocal, 0x0800, make([]byte, 1400))
	b.ReportAllocs()
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		tr.r.HandleCaptured(f)
	}
}

func BenchmarkHandleCapturedBroadcast(b *testing.B) {
	tr := hotPathRouter(b)
	f := ethFrame(macBcast, macLocal, 0x0806, make([]byte, 28))
	b.ReportAllocs()
	for b.Loop() {
		tr.r.HandleCaptured(f)
	}
}

func BenchmarkHandleForwarded(b *testing.B) {
	tr := hotPathRouter(b)
	f := ethFrame(macLocal, macRemote, 0x0800, make([]byte, 1400))
	b.ReportAllocs()
	for b.Loop() {
		tr.r.HandleForwarded(peerC, us, f)
	}
}

// BenchmarkMACLookup is the MAC cache lookup alone (one per captured
// unicast frame), in a cache of 1024 entries.
func BenchmarkMACLookup(b *testing.B) {
	c := newMACCache(time.Hour, time.Second, time.Now)
	macs := make([]MAC, 1024)
	for i := range macs {
		macs[i] = MAC{0x02, 0, 0, 0, byte(i >> 8), byte(i)}
		c.Add(macs[i], mesh.PeerName(i+1))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := c.Lookup(macs[i&1023]); !ok {
			b.Fatal("miss")
		}
		i++
	}
}
