package mesh

import (
	"errors"
	"testing"
	"time"

	wmesh "github.com/weaveworks/mesh"
)

func TestCheckRouterConfig(t *testing.T) {
	zero := time.Duration(0)
	good := wmesh.Config{Host: "127.0.0.1", Port: 6783, ConnLimit: 200, ProtocolMinVersion: 1}
	if err := CheckRouterConfig(good); err != nil {
		t.Fatalf("good config rejected: %v", err)
	}
	bad := map[string]func(*wmesh.Config){
		"min version 0": func(c *wmesh.Config) { c.ProtocolMinVersion = 0 },
		"min version 3": func(c *wmesh.Config) { c.ProtocolMinVersion = 3 },
		"port 0":        func(c *wmesh.Config) { c.Port = 0 },
		"conn limit 0":  func(c *wmesh.Config) { c.ConnLimit = 0 },
		"empty pw":      func(c *wmesh.Config) { c.Password = []byte{} },
		"gossip 0":      func(c *wmesh.Config) { c.GossipInterval = &zero },
	}
	for name, mutate := range bad {
		c := good
		mutate(&c)
		if err := CheckRouterConfig(c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: got %v, want ErrBadConfig", name, err)
		}
	}
}
