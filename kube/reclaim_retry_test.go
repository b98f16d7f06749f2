package kube

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/api"
	"github.com/seedf75a49c6/weave/ipam"
	"github.com/weaveworks/mesh"
)

// TestReclaimRetrySoonWhilePeerIsDropped: the router's refusal of rmpeer
// (through the real IPAM HTTP handler and API client) for a peer that mesh
// still lists but is about to drop makes weave-kube retry after 0.5 s;
// for a peer still reachable (its Node is deleted: liveness has not
// decided yet) after 0.5 s doubling up to 10 s; anything else after 10 s.
func TestReclaimRetrySoonWhilePeerIsDropped(t *testing.T) {
	dropping, _ := mesh.PeerNameFromString("aa:00:00:00:00:02")
	a, err := ipam.New(ipam.Config{
		OurName: 0xaa0000000001, OurUID: 1,
		IsKnownPeer:  func(mesh.PeerName) bool { return true },
		PeerDropping: func(p mesh.PeerName) bool { return p == dropping },
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(a.Stop)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	c := api.NewClient(api.Config{Addr: strings.TrimPrefix(srv.URL, "http://")})
	for _, tc := range []struct {
		peer  string
		fails int
		want  string
	}{
		{"aa:00:00:00:00:02", 0, "500ms"}, // about to be dropped
		{"aa:00:00:00:00:02", 7, "500ms"}, // ... however often
		{"aa:00:00:00:00:03", 0, "500ms"}, // still reachable: liveness has not decided yet
		{"aa:00:00:00:00:03", 2, "2s"},    // backing off
		{"aa:00:00:00:00:03", 9, "8s"},    // capped below retryAfter
	} {
		_, err := c.RemovePeer(context.Background(), tc.peer)
		if err == nil {
			t.Fatalf("rmpeer %s accepted; want a 409 refusal", tc.peer)
		}
		if got := reclaimRetryDelay(err, tc.fails).String(); got != tc.want {
			t.Errorf("rmpeer %s refused with %v (%d before): retry after %s, want %s", tc.peer, err, tc.fails, got, tc.want)
		}
	}
	if got := reclaimRetryDelay(errors.New("connection refused"), 0); got != retryAfter {
		t.Errorf("a router that does not answer: retry after %v, want %v", got, retryAfter)
	}
}
