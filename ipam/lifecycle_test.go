package ipam

import (
	"runtime"
	"testing"
	"time"
)

// TestNoGoroutineLeak: Start/Stop cycles leave no goroutine behind.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
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
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // poll: goroutine exit has no event
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("goroutines: %d before, %d after", before, n)
	}
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
