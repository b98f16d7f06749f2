package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/seedf75a49c6/weave/internal/iptables"
)

// ipamDBFile is weaver's IPAM database in its data dir.
const ipamDBFile = "weavedata.db"

// stopGrace is how long weaver gets to exit on SIGTERM.
const stopGrace = 10 * time.Second

// Agent is one node's weave-kube.
type Agent struct {
	cfg       Config
	log       *slog.Logger
	out       io.Writer // weaver's output
	kube      kubernetes.Interface
	nodes     listersv1.NodeLister
	backend   iptables.Backend
	isLocal   func(string) bool
	peerName  string
	weaver    *Weaver
	store     *Store
	connected []string // the peers weaver was last told

	reclaimFails int // reclaims refused in a row (the retry backs off)

	changed chan struct{} // a Node was added, changed or deleted: reconnect
	deleted chan struct{} // a Node was deleted: reclaim (after a random delay)
}

// RestConfig is KUBECONFIG's cluster when set, else the in-cluster one.
func RestConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load KUBECONFIG %s: %w", kubeconfig, err)
		}
		return c, nil
	}
	c, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("in-cluster Kubernetes config (or set KUBECONFIG): %w", err)
	}
	return c, nil
}

// Run is weave-kube's main loop: it returns when ctx ends (after stopping
// weaver) or weaver exits.
func Run(ctx context.Context, cfg Config, log *slog.Logger, weaverOut io.Writer) error {
	a := &Agent{cfg: cfg, log: log, out: weaverOut,
		changed: make(chan struct{}, 1), deleted: make(chan struct{}, 1)}
	if err := a.setup(ctx); err != nil {
		return err
	}
	if err := a.start(ctx); err != nil {
		if a.weaver != nil {
			a.weaver.Stop(stopGrace)
		}
		return err
	}
	return a.loop(ctx)
}

// setup chooses the iptables backend and connects to the API.
func (a *Agent) setup(ctx context.Context) error {
	b, detected, counts, err := iptables.Resolve(ctx)
	if err != nil {
		return err
	}
	a.backend = b
	how := "from " + iptables.EnvVar
	if detected {
		how = fmt.Sprintf("detected: %d legacy rules, %d nft rules", counts.Legacy, counts.NFT)
	}
	a.log.Info("iptables backend", "backend", string(b), "how", how)
	if err := os.Setenv(iptables.EnvVar, string(b)); err != nil { // for our own iptables calls
		return fmt.Errorf("set %s: %w", iptables.EnvVar, err)
	}
	if a.isLocal, err = LocalAddrs(); err != nil {
		return err
	}
	rc, err := RestConfig(a.cfg.Kubeconfig)
	if err != nil {
		return err
	}
	if a.kube, err = kubernetes.NewForConfig(rc); err != nil {
		return fmt.Errorf("Kubernetes client for %s: %w", rc.Host, err)
	}
	a.store = &Store{Client: a.kube.CoreV1()}
	return a.watchNodes(ctx)
}

// watchNodes starts the Node informer and waits for its first list.
func (a *Agent) watchNodes(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(a.kube, 0)
	inf := f.Core().V1().Nodes()
	a.nodes = inf.Lister()
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { signal(a.changed) },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			n, ok2 := cur.(*corev1.Node)
			if !ok1 || !ok2 || NodeAddress(o) != NodeAddress(n) {
				signal(a.changed)
			}
		},
		DeleteFunc: func(any) { signal(a.changed); signal(a.deleted) },
	})
	if err != nil {
		return fmt.Errorf("watch Nodes: %w", err)
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("list %v from the API server: %w", typ, errors.Join(ctx.Err(), errors.New("cache did not sync")))
		}
	}
	return nil
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// peers is the peer set: KUBE_PEERS when given, else from the Node list.
func (a *Agent) peers() (PeerSet, error) {
	if a.cfg.KubePeers != nil {
		var others []string
		for _, p := range a.cfg.KubePeers {
			if !a.isLocal(p) {
				others = append(others, p)
			}
		}
		return PeerSet{All: a.cfg.KubePeers, Others: others}, nil
	}
	nodes, err := a.nodes.List(labels.Everything())
	if err != nil {
		return PeerSet{}, fmt.Errorf("list Nodes: %w", err)
	}
	return PeersFromNodes(nodes, a.isLocal), nil
}

func (a *Agent) nodeNames() ([]string, error) {
	nodes, err := a.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return names, nil
}

// randomDelay is a uniform wait in [0, max), so survivors of a Node delete
// do not all reclaim at the same instant (correct either way).
func randomDelay(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(max)))
}

// dbPaths are weaver's IPAM database and Weave Net 2.8.1's data file,
// which weaver adopts in place when its own is absent (weaver --db-prefix).
func (a *Agent) dbPaths() []string {
	dir := or(a.cfg.Weave.DataDir, "/var/lib/weave")
	return []string{filepath.Join(dir, ipamDBFile), or(a.cfg.DBPrefix, filepath.Join(dir, "weave-net")) + "data.db"}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
