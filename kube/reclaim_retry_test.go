package kube

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seedf75a49c6/weave/internal/api"
	"github.com/seedf75a49c6/weave/ipam"
	"github.com/weaveworks/mesh"
)

// TestReclaimRetrySoonWhilePeerIsDropped: the router's refusal of rmpeer
// for a peer that mesh still lists but is about to drop (through the real
// IPAM HTTP handler and API client) makes weave-kube retry after
// retrySoon; a refusal for a reachable peer keeps the 10 s retry.
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
		peer string
		want string
	}{
		{"aa:00:00:00:00:02", retrySoon.String()},
		{"aa:00:00:00:00:03", retryAfter.String()},
	} {
		_, err := c.RemovePeer(context.Background(), tc.peer)
		if err == nil {
			t.Fatalf("rmpeer %s accepted; want a 409 refusal", tc.peer)
		}
		if got := reclaimRetryDelay(err).String(); got != tc.want {
			t.Errorf("rmpeer %s refused with %v: retry after %s, want %s", tc.peer, err, got, tc.want)
		}
	}
}
