package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/seedf75a49c6/weave/internal/cli"
)

// retryAfter is when a failed reconnect or reclaim is tried again.
const retryAfter = 10 * time.Second

// start launches weaver and does 2.8.1's post-launch steps: record us in
// the peer list, reclaim dead peers, expose, and mark the Node's network up.
func (a *Agent) start(ctx context.Context) error {
	set, err := a.peers()
	if err != nil {
		return err
	}
	if err := CheckRangeFree(a.cfg.IPAllocRange, or(a.cfg.Weave.Bridge, "weave")); err != nil {
		return err
	}
	if a.peerName, err = a.cfg.PrintPeerName(ctx, a.backend); err != nil {
		return err
	}
	if err := a.dropStaleDB(ctx); err != nil {
		return err
	}
	a.log.Info("starting weaver", "peer", a.peerName, "node", a.cfg.NodeName, "peers", set.Others, "nodes", len(set.All))
	if a.weaver, err = a.cfg.StartWeaver(ctx, a.backend, set.Others, len(set.All), a.out); err != nil {
		return err
	}
	if err := a.weaver.WaitReady(ctx); err != nil {
		return err
	}
	a.connected = sortedCopy(set.Others)
	if err := a.store.AddPeer(ctx, a.peerName, a.cfg.NodeName); err != nil {
		return fmt.Errorf("add ourselves to the peer list: %w", err)
	}
	a.reclaim(ctx)
	if err := a.expose(ctx); err != nil {
		return err
	}
	if err := SetNetworkAvailable(ctx, a.kube, a.cfg.NodeName); err != nil {
		return err
	}
	a.log.Info("weave is up", "node", a.cfg.NodeName, "condition", "NetworkUnavailable=False")
	return nil
}

// dropStaleDB deletes weaver's IPAM database (and Weave Net 2.8.1's data
// file, which weaver would adopt in its place) when one exists but our
// peer name is not in the peer list: others have reclaimed our space
// since (we were deleted as a Node), and starting from the old ring would
// clash with theirs. 2.8.1's launch did the same.
func (a *Agent) dropStaleDB(ctx context.Context) error {
	var present []string
	for _, p := range a.dbPaths() {
		if _, err := os.Stat(p); err == nil {
			present = append(present, p)
		}
	}
	if len(present) == 0 {
		return nil
	}
	cm, err := a.store.Get(ctx)
	if err != nil {
		return err
	}
	list, err := Peers(cm)
	if err != nil || list.Contains(a.peerName) {
		return err
	}
	a.log.Warn("our peer name is not in the peer list (our space was reclaimed); removing the persisted IPAM data to start afresh",
		"peer", a.peerName, "db", strings.Join(present, ", "))
	for _, p := range present {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale IPAM database: %w", err)
		}
	}
	return nil
}

// expose runs `weave expose WEAVE_EXPOSE_IP` against our router.
func (a *Agent) expose(ctx context.Context) error {
	if a.cfg.ExposeIP == "" {
		return nil
	}
	w := a.cfg.weaverCLI()
	w.Stdout, w.Stderr = a.out, a.out
	if code := cli.Run(ctx, w, []string{"expose", a.cfg.ExposeIP}); code != cli.ExitOK {
		return fmt.Errorf("weave expose %s failed (exit %d)", a.cfg.ExposeIP, code)
	}
	return nil
}

// loop follows Node events until ctx ends or weaver exits.
func (a *Agent) loop(ctx context.Context) error {
	var reclaimAt, retryAt <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			a.log.Info("stopping weaver")
			a.weaver.Stop(stopGrace)
			return nil
		case <-a.weaver.Done():
			return a.weaver.Err()
		case <-a.changed:
			if !a.connect(ctx) {
				retryAt = time.After(retryAfter)
			}
		case <-retryAt:
			signal(a.changed)
		case <-a.deleted:
			if reclaimAt == nil {
				reclaimAt = time.After(randomDelay(a.cfg.ReclaimDelay))
			}
		case <-reclaimAt:
			reclaimAt = nil
			if d := a.reclaim(ctx); d > 0 {
				reclaimAt = time.After(d)
			}
			a.connect(ctx)
		}
	}
}

// connect tells weaver the current peers (POST /connect replace=true) when
// they changed since last time; false on failure.
func (a *Agent) connect(ctx context.Context) bool {
	set, err := a.peers()
	if err != nil {
		a.log.Error("list peers", "err", err)
		return false
	}
	peers := sortedCopy(set.Others)
	if slices.Equal(peers, a.connected) {
		return true
	}
	if err := a.weaver.API.Connect(ctx, peers, true); err != nil {
		a.log.Error("connect to peers", "peers", peers, "err", err)
		return false
	}
	a.log.Info("connected to the current peers", "peers", peers)
	a.connected = peers
	return true
}

// reclaim runs one Reclaim; on failure it returns when to retry (0 when
// it succeeded).
func (a *Agent) reclaim(ctx context.Context) time.Duration {
	r := &Reclaimer{Store: a.store, Router: a.weaver.API, Nodes: a.nodeNames,
		PeerName: a.peerName, NodeName: a.cfg.NodeName, Log: a.log}
	removed, err := r.Reclaim(ctx)
	if len(removed) > 0 {
		a.log.Info("reclaimed the address space of removed peers", "peers", removed)
	}
	if err != nil {
		d := reclaimRetryDelay(err, a.reclaimFails)
		a.reclaimFails++
		if d < retryAfter {
			a.log.Info("reclaim refused while the router still lists the peer; retrying soon", "err", err, "retry", d)
		} else {
			a.log.Error("reclaim removed peers", "err", err)
		}
		return d
	}
	a.reclaimFails = 0
	return 0
}
