package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/seedf75a49c6/weave/internal/api"
)

// PeerRemover is the router call reclaim makes (DELETE /peer/<name>).
type PeerRemover interface {
	RemovePeer(ctx context.Context, peer string) (string, error)
}

// Reclaimer takes over the address space of peers whose Node is gone.
type Reclaimer struct {
	Store    *Store
	Router   PeerRemover
	Nodes    func() ([]string, error) // names of the Nodes that exist now
	PeerName string                   // ours
	NodeName string                   // ours
	Log      *slog.Logger
}

// quietPasses is how many passes in a row must change nothing before
// Reclaim stops, as in 2.8.1.
const quietPasses = 3

// Reclaim removes every listed peer whose Node no longer exists (or that
// claims our Node without being us: our own previous incarnation), one
// peer at a time under its lock annotation, and returns the peers this
// call removed. It loops until quietPasses passes change nothing.
func (r *Reclaimer) Reclaim(ctx context.Context) ([]string, error) {
	var removed []string
	for quiet := 0; quiet < quietPasses; quiet++ {
		dead, err := r.deadPeers(ctx)
		if err != nil || len(dead) == 0 {
			return removed, err
		}
		for _, peer := range dead {
			done, err := r.reclaimPeer(ctx, peer)
			if err != nil {
				return removed, err
			}
			if done {
				removed = append(removed, peer)
				quiet = -1
			}
		}
	}
	return removed, nil
}

// deadPeers lists the peers to reclaim, never ourselves.
func (r *Reclaimer) deadPeers(ctx context.Context) ([]string, error) {
	cm, err := r.Store.Get(ctx)
	if err != nil {
		return nil, err
	}
	list, err := Peers(cm)
	if err != nil {
		return nil, err
	}
	names, err := r.Nodes()
	if err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	exists := map[string]bool{}
	for _, n := range names {
		exists[n] = true
	}
	var dead []string
	for _, p := range list.Peers {
		stale := !exists[p.NodeName] || p.NodeName == r.NodeName
		if p.PeerName != r.PeerName && stale {
			dead = append(dead, p.PeerName)
		}
	}
	return dead, nil
}

// reclaimPeer takes the lock of peer, removes it from the router's ring,
// then drops it from the list. done is false when another node holds the
// lock or won the race to take it.
func (r *Reclaimer) reclaimPeer(ctx context.Context, peer string) (done bool, err error) {
	won, err := r.lock(ctx, peer)
	if err != nil || !won {
		return false, err
	}
	r.Log.Info("reclaiming the address space of a removed peer", "peer", peer)
	result, err := r.Router.RemovePeer(ctx, peer)
	if err != nil {
		return false, fmt.Errorf("rmpeer %s: %w", peer, err)
	}
	r.Log.Info("rmpeer done", "peer", peer, "result", strings.TrimSpace(result))
	return true, r.forget(ctx, peer)
}

// lock records us as peer's reclaimer with an Update of the ConfigMap as
// read: of two nodes racing from the same version, the API server lets
// one write and answers the other 409 Conflict. A lock we already hold
// (we restarted mid-reclaim) counts as won.
func (r *Reclaimer) lock(ctx context.Context, peer string) (bool, error) {
	cm, err := r.Store.Get(ctx)
	if err != nil {
		return false, err
	}
	list, err := Peers(cm)
	if err != nil || !list.Contains(peer) {
		return false, err // someone finished it meanwhile
	}
	key := LockKey(peer)
	if holder, ok := cm.Annotations[key]; ok {
		if holder != r.PeerName {
			r.Log.Debug("another peer is reclaiming", "peer", peer, "by", holder)
		}
		return holder == r.PeerName, nil
	}
	cm.Annotations[key] = r.PeerName
	err = r.Store.Update(ctx, cm)
	if apierrors.IsConflict(err) {
		r.Log.Debug("lost the race for a reclaim lock", "peer", peer)
		return false, nil
	}
	return err == nil, err
}

// forget drops peer from the list, its lock, and every lock peer itself
// held (it died while reclaiming someone: that one is free again).
func (r *Reclaimer) forget(ctx context.Context, peer string) error {
	return r.Store.Modify(ctx, func(cm *corev1.ConfigMap) (bool, error) {
		list, err := Peers(cm)
		if err != nil {
			return false, err
		}
		for k, v := range cm.Annotations {
			if v == peer && strings.HasPrefix(k, AnnotationPrefix) {
				delete(cm.Annotations, k)
			}
		}
		delete(cm.Annotations, LockKey(peer))
		return true, setPeers(cm, list.without(peer))
	})
}

// Retry delays after a failed reclaim. The router refuses rmpeer of a
// peer that mesh still lists but that is about to be dropped (liveness
// holds it dead or suspect, or mesh no longer reaches it; it goes within a
// second or two): retried after retrySoon. A peer whose Node was deleted
// but that the router still reaches has usually just died without a reset
// and liveness has not decided yet (~2 s): retried after retrySoon
// doubling with each refusal up to retryAfter. Anything else after
// retryAfter.
const retrySoon = 500 * time.Millisecond

// reclaimRetryDelay is how long to wait before retrying after err, the
// fails-th failure in a row (from 0).
func reclaimRetryDelay(err error, fails int) time.Duration {
	var he *api.HTTPError
	if !errors.As(err, &he) || he.Code != http.StatusConflict {
		return retryAfter
	}
	switch {
	case strings.Contains(he.Message, "about to be dropped"):
		return retrySoon
	case strings.Contains(he.Message, "still reachable"):
		return min(retryAfter, retrySoon<<min(fails, 4))
	}
	return retryAfter
}
