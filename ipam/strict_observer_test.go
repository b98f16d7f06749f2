package ipam

import (
	"slices"
	"sync"
	"testing"

	"github.com/seedf75a49c6/weave/ipam/ring"
	"github.com/seedf75a49c6/weave/ipam/ring/ringcheck"
	"github.com/weaveworks/mesh"
)

// strictObserver is a Weave 2.8.1 peer that owns no space and listens to
// every ring the in-memory network carries: each must merge under 2.8.1's
// rules into what it holds, and no token version may show two contents.
// Rings of another cluster (other seeds or universe) are ignored: 2.8.1
// refuses them before looking at entries.
type strictObserver struct {
	mu    sync.Mutex
	held  ringcheck.Ring
	seeds []mesh.PeerName
	hist  ringcheck.History
	seen  int
}

// observerName is a peer name no test uses.
const observerName = mesh.PeerName(0x0b0000000001)

func checkable(r *ring.Ring) ringcheck.Ring {
	out := ringcheck.Ring{Start: r.Start, End: r.End, Peer: r.Peer}
	for _, e := range r.AllEntries() {
		out.Entries = append(out.Entries, ringcheck.Entry{Token: e.Token, Peer: e.Peer, Version: e.Version, Free: e.Free})
	}
	return out
}

func (o *strictObserver) observe(t testing.TB, payload []byte, unicast bool) {
	if unicast {
		if len(payload) == 0 || payload[0] != msgRingUpdate {
			return
		}
		payload = payload[1:]
	}
	st, err := decodeState(payload)
	if err != nil || st.Ring == nil || st.Ring.Empty() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	in := checkable(st.Ring)
	if o.seen > 0 && (!slices.Equal(o.seeds, st.Ring.Seeds) || in.Start != o.held.Start || in.End != o.held.End) {
		return
	}
	if o.seen == 0 {
		o.hist.TakeoverRaces = true // rmpeer races are tested on purpose
		o.held, o.seeds = ringcheck.Ring{Start: in.Start, End: in.End, Peer: observerName}, st.Ring.Seeds
	}
	o.seen++
	if err := o.hist.Observe(in); err != nil {
		t.Errorf("strict 2.8.1 check: %v", err)
	}
	got, err := ringcheck.Merge(o.held, in, ringcheck.NoAllocations)
	if err != nil {
		t.Errorf("a 2.8.1 peer refuses the ring of %s: %v\nheld:     %s\nincoming: %s", in.Peer, err, o.held, in)
		return
	}
	o.held = got
}
