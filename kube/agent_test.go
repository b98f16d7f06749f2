package kube

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/seedf75a49c6/weave/test/k8s"
)

// TestStaleDBDroppedWhenPeerNotListed: a node whose peer was reclaimed
// while it was away (its name left the peer list) starts with a fresh
// IPAM database; a listed peer keeps its database.
func TestStaleDBDroppedWhenPeerNotListed(t *testing.T) {
	srv := k8s.Start(t)
	store := &Store{Client: srv.Admin(t).CoreV1()}
	if err := store.AddPeer(context.Background(), peerName(1), "node1"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		peer string
		kept bool
	}{{peerName(1), true}, {peerName(2), false}} {
		dir := t.TempDir()
		a := &Agent{store: store, peerName: tc.peer, log: quietLog()}
		a.cfg.Weave.DataDir = dir
		db := filepath.Join(dir, ipamDBFile)
		if err := os.WriteFile(db, []byte("ring"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := a.dropStaleDB(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(db)
		if kept := err == nil; kept != tc.kept {
			t.Errorf("peer %s: database kept = %v, want %v", tc.peer, kept, tc.kept)
		}
		if !tc.kept && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stat: %v", err)
		}
	}
}
