package kube

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/seedf75a49c6/weave/test/k8s"
)

// countingRouter records every rmpeer it gets, from every reclaimer.
type countingRouter struct {
	mu      sync.Mutex
	removed map[string][]string // dead peer -> the reclaimers that removed it
	by      string
	shared  *countingRouter
}

func (c *countingRouter) RemovePeer(_ context.Context, peer string) (string, error) {
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	c.shared.removed[peer] = append(c.shared.removed[peer], c.by)
	return "3 IPs taken over from " + peer + "\n", nil
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func nodeNames(c kubernetes.Interface) func() ([]string, error) {
	return func() ([]string, error) {
		l, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, n := range l.Items {
			out = append(out, n.Name)
		}
		return out, nil
	}
}

func peerName(i int) string { return fmt.Sprintf("aa:00:00:00:00:%02x", i) }

// TestReclaimRaceRemovesEachDeadPeerOnce: five survivors reclaim at the
// same moment against the real API server, each with its own client. Each
// of the four dead peers is rmpeer'd exactly once in total, the peer list
// ends with the survivors only, and no lock annotation is left behind.
func TestReclaimRaceRemovesEachDeadPeerOnce(t *testing.T) {
	srv := k8s.Start(t)
	admin := srv.Admin(t)
	const survivors, dead = 5, 4
	store := &Store{Client: admin.CoreV1()}
	for i := range survivors + dead {
		node := fmt.Sprintf("node%d", i)
		if i < survivors {
			srv.CreateNode(t, node, fmt.Sprintf("192.168.100.%d", i+1))
		}
		if err := store.AddPeer(context.Background(), peerName(i), node); err != nil {
			t.Fatal(err)
		}
	}
	shared := &countingRouter{removed: map[string][]string{}}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, survivors)
	for i := range survivors {
		client := srv.Client(t, srv.AdminConfig()) // one connection each, as separate nodes
		r := &Reclaimer{
			Store: &Store{Client: client.CoreV1()}, Router: &countingRouter{by: peerName(i), shared: shared},
			Nodes: nodeNames(client), PeerName: peerName(i), NodeName: fmt.Sprintf("node%d", i), Log: quietLog(),
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, errs[i] = r.Reclaim(ctx)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("reclaimer %d: %v", i, err)
		}
	}
	for i := survivors; i < survivors+dead; i++ {
		if by := shared.removed[peerName(i)]; len(by) != 1 {
			t.Errorf("dead peer %s removed %d times (by %v), want exactly once", peerName(i), len(by), by)
		}
	}
	assertOnlySurvivors(t, store, survivors)
}

func assertOnlySurvivors(t *testing.T, store *Store, survivors int) {
	t.Helper()
	cm, err := store.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	list, err := Peers(cm)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range list.Peers {
		got = append(got, p.PeerName)
	}
	slices.Sort(got)
	var want []string
	for i := range survivors {
		want = append(want, peerName(i))
	}
	if !slices.Equal(got, want) {
		t.Errorf("peer list = %v, want the survivors %v", got, want)
	}
	for k := range cm.Annotations {
		if k != PeersAnnotation && strings.HasPrefix(k, AnnotationPrefix) {
			t.Errorf("lock annotation %s=%s left behind", k, cm.Annotations[k])
		}
	}
}

// TestReclaimSkipsPeerLockedByAnother: a lock held by another live peer
// (a 2.8.1 node mid-reclaim, say) is respected: no rmpeer, entry kept.
func TestReclaimSkipsPeerLockedByAnother(t *testing.T) {
	srv := k8s.Start(t)
	admin := srv.Admin(t)
	store := &Store{Client: admin.CoreV1()}
	srv.CreateNode(t, "node0", "192.168.100.1")
	for i, node := range []string{"node0", "gone"} {
		if err := store.AddPeer(context.Background(), peerName(i), node); err != nil {
			t.Fatal(err)
		}
	}
	err := store.Modify(context.Background(), func(cm *corev1.ConfigMap) (bool, error) {
		cm.Annotations[LockKey(peerName(1))] = "bb:00:00:00:00:99"
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := LockKey(peerName(1)); got != "kube-peers.weave.works/aa_00_00_00_00_01" {
		t.Fatalf("LockKey = %q, want 2.8.1's form", got)
	}
	shared := &countingRouter{removed: map[string][]string{}}
	r := &Reclaimer{Store: store, Router: &countingRouter{by: peerName(0), shared: shared},
		Nodes: nodeNames(admin), PeerName: peerName(0), NodeName: "node0", Log: quietLog()}
	removed, err := r.Reclaim(context.Background())
	if err != nil || len(removed) != 0 || len(shared.removed) != 0 {
		t.Fatalf("Reclaim = %v, %v; rmpeers %v; want nothing done", removed, err, shared.removed)
	}
}

// TestReclaimTakesOverOurPreviousIncarnation: an entry naming our Node
// under another peer name (the node was reinstalled, or upgraded from
// 2.8.1 with a new peer name) is reclaimed by us, though the Node exists.
func TestReclaimTakesOverOurPreviousIncarnation(t *testing.T) {
	srv := k8s.Start(t)
	admin := srv.Admin(t)
	store := &Store{Client: admin.CoreV1()}
	srv.CreateNode(t, "node0", "192.168.100.1")
	for _, p := range []string{peerName(9), peerName(0)} { // old first, as it was
		if err := store.AddPeer(context.Background(), p, "node0"); err != nil {
			t.Fatal(err)
		}
	}
	shared := &countingRouter{removed: map[string][]string{}}
	r := &Reclaimer{Store: store, Router: &countingRouter{by: peerName(0), shared: shared},
		Nodes: nodeNames(admin), PeerName: peerName(0), NodeName: "node0", Log: quietLog()}
	removed, err := r.Reclaim(context.Background())
	if err != nil || len(removed) != 1 || removed[0] != peerName(9) || len(shared.removed[peerName(9)]) != 1 {
		t.Fatalf("Reclaim = %v, %v; rmpeers %v; want the old incarnation removed once", removed, err, shared.removed)
	}
	assertOnlySurvivors(t, store, 1)
}
