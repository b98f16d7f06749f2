package ipam

import (
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/testutil"
)

// TestNoGoroutineLeak: Start/Stop cycles leave no goroutine behind.
func TestNoGoroutineLeak(t *testing.T) {
	testutil.CheckGoroutines(t, 5*time.Second)
	for i := 0; i < 20; i++ {
		cfg := DefaultConfig()
		cfg.OurName, cfg.OurUID = 1, 1
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		a.Start()
		a.Start()
		_ = a.Status()
		a.Stop()
		a.Stop()
	}
	never, err := New(Config{OurName: 2})
	if err != nil {
		t.Fatal(err)
	}
	never.Stop() // never started
}

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.Universe != DefaultUniverse || c.DefaultSubnet != DefaultUniverse || c.TickInterval != 5*time.Second ||
		c.ConsensusTimeout != time.Minute || c.ClaimTries != 5 || c.OurName != 0 {
		t.Fatalf("defaults %+v", c)
	}
	if err := c.Validate(); err == nil {
		t.Fatal("config without a peer name validated")
	}
}
