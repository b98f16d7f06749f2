//go:build linux

package netns

import (
	"errors"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	vnetns "github.com/vishvananda/netns"
)

func TestDoEntersAndRestores(t *testing.T) {
	_, path := netnstest.NewNS(t)
	before, err := vnetns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	target, err := vnetns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()

	var inside vnetns.NsHandle
	err = Do(path, func() error {
		h, err := vnetns.Get()
		if err != nil {
			return err
		}
		inside = h
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer inside.Close()
	if !inside.Equal(target) {
		t.Errorf("inside Do the thread is in %s, want %s", inside, target)
	}
	after, err := vnetns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if !after.Equal(before) {
		t.Errorf("after Do the thread is in %s, want original %s", after, before)
	}
}

func TestDoPropagatesError(t *testing.T) {
	_, path := netnstest.NewNS(t)
	want := errors.New("boom")
	if err := Do(path, func() error { return want }); !errors.Is(err, want) {
		t.Fatalf("Do error = %v, want %v", err, want)
	}
}

func TestDoBadPath(t *testing.T) {
	netnstest.RequireRoot(t)
	called := false
	err := Do("/nonexistent/netns", func() error { called = true; return nil })
	if err == nil || called {
		t.Fatalf("Do on a missing path: err=%v called=%v", err, called)
	}
}
