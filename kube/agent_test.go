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
// IPAM database, and without Weave Net 2.8.1's data file, which weaver
// would otherwise adopt; a listed peer keeps both.
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
		for _, db := range []string{filepath.Join(dir, ipamDBFile), filepath.Join(dir, "weave-netdata.db")} {
			if err := os.WriteFile(db, []byte("ring"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.dropStaleDB(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, db := range []string{filepath.Join(dir, ipamDBFile), filepath.Join(dir, "weave-netdata.db")} {
			_, err := os.Stat(db)
			if kept := err == nil; kept != tc.kept {
				t.Errorf("peer %s: %s kept = %v, want %v", tc.peer, filepath.Base(db), kept, tc.kept)
			}
			if !tc.kept && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("stat: %v", err)
			}
		}
	}
}
