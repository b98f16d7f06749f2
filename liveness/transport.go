package liveness

import (
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// countingTransport is memberlist's own UDP+TCP transport, counting the
// bytes of the UDP packets it sends (probes, acks, gossip): the part of
// liveness traffic that scales with the cluster. Push/pull and fallback
// pings use TCP streams, which are not counted here.
type countingTransport struct {
	*memberlist.NetTransport
	sent atomic.Uint64
}

func newCountingTransport(c *Config) (*countingTransport, error) {
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{c.BindAddr}, BindPort: c.Port, Logger: newStdLogger(c.Logger, nil),
	})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Port)), err)
	}
	return &countingTransport{NetTransport: nt}, nil
}

// WriteTo implements memberlist.Transport.
func (t *countingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress implements memberlist.NodeAwareTransport.
func (t *countingTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	at, err := t.NetTransport.WriteToAddress(b, a)
	if err == nil {
		t.sent.Add(uint64(len(b)))
	}
	return at, err
}
