package router

import "testing"

// batchingOverlay is a fakeOverlay that counts its batches.
type batchingOverlay struct {
	*fakeOverlay
	begun, ended int
}

func (o *batchingOverlay) BeginBatch() { o.begun++ }
func (o *batchingOverlay) EndBatch()   { o.ended++ }

// batchSourceInjector is a fakeInjector that frames its handling in batches.
type batchSourceInjector struct {
	fakeInjector
	begin, end func()
}

func (i *batchSourceInjector) SetBatch(begin, end func()) { i.begin, i.end = begin, end }

// TestWireBatch: the capture's bursts open and close a batch of every
// overlay that batches, and of no other; an injector that does not frame
// bursts is left alone.
func TestWireBatch(t *testing.T) {
	for _, n := range []int{1, 2} {
		var bs []*batchingOverlay
		ovs := []Overlay{&fakeOverlay{name: "plain"}}
		for range n {
			b := &batchingOverlay{fakeOverlay: &fakeOverlay{name: "batching"}}
			bs = append(bs, b)
			ovs = append(ovs, b)
		}
		r := NewNetworkRouter(Config{}, ovs...)
		inj := &batchSourceInjector{}
		r.wireBatch(inj)
		if inj.begin == nil || inj.end == nil {
			t.Fatalf("%d batching overlays: no batch hooks set", n)
		}
		inj.begin()
		inj.begin()
		inj.end()
		for i, b := range bs {
			if b.begun != 2 || b.ended != 1 {
				t.Errorf("%d batching overlays: overlay %d begun %d ended %d, want 2 and 1", n, i, b.begun, b.ended)
			}
		}
		r.wireBatch(&fakeInjector{}) // no BatchSource: nothing to wire, no panic
	}
	r := NewNetworkRouter(Config{}, &fakeOverlay{name: "plain"})
	inj := &batchSourceInjector{}
	r.wireBatch(inj)
	if inj.begin != nil || inj.end != nil {
		t.Error("batch hooks set with no batching overlay")
	}
}

// sourceOverlay is a fakeOverlay whose receive loop frames bursts.
type sourceOverlay struct {
	*fakeOverlay
	begin, end func()
}

func (o *sourceOverlay) SetBatch(begin, end func()) { o.begin, o.end = begin, end }

// batchingInjector is a fakeInjector that counts its batches.
type batchingInjector struct {
	fakeInjector
	begun, ended int
}

func (i *batchingInjector) BeginBatch() { i.begun++ }
func (i *batchingInjector) EndBatch()   { i.ended++ }

// TestWireInjectBatch: an overlay's receive bursts open and close the
// injector's batch.
func TestWireInjectBatch(t *testing.T) {
	s := &sourceOverlay{fakeOverlay: &fakeOverlay{name: "source"}}
	r := NewNetworkRouter(Config{}, &fakeOverlay{name: "plain"}, s)
	inj := &batchingInjector{}
	r.wireBatch(inj)
	if s.begin == nil || s.end == nil {
		t.Fatal("no batch hooks set on the overlay")
	}
	s.begin()
	s.end()
	if inj.begun != 1 || inj.ended != 1 {
		t.Errorf("injector begun %d ended %d, want 1 and 1", inj.begun, inj.ended)
	}
}
