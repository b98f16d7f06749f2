package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	netlisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/seedf75a49c6/weave/npc"
	"github.com/seedf75a49c6/weave/npc/nft"
)

// Enforcer loads models; *nft.Enforcer is the real one.
type Enforcer interface {
	Apply(*npc.Model) (nft.Stats, error)
	Blocked() ([]nft.Blocked, error)
}

// Config of a controller. Client, NodeName and Enforcer are required.
type Config struct {
	Client       kubernetes.Interface
	NodeName     string // pods with this spec.nodeName are enforced here
	Enforcer     Enforcer
	Log          *slog.Logger
	Registerer   prometheus.Registerer // nil: no metrics registered
	PollInterval time.Duration         // blocked-connection counters; default 5s
	Resync       time.Duration         // informer resync; default 0 (none)
}

// Controller watches the API and keeps the node's table current.
type Controller struct {
	cfg      Config
	pods     corelisters.PodLister
	nss      corelisters.NamespaceLister
	pols     netlisters.NetworkPolicyLister
	factory  informers.SharedInformerFactory
	dirty    chan struct{}
	metrics  *metrics
	counters *counters
	applied  chan Applied // optional observer, see Applied
}

// Applied describes one successful load, for observers (tests, bench).
type Applied struct {
	Stats    nft.Stats
	Model    *npc.Model
	Duration time.Duration
}

// New builds a controller; Run starts it.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Enforcer == nil || cfg.NodeName == "" {
		return nil, errors.New("controller: Client, Enforcer and NodeName are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 5 * time.Second
	}
	f := informers.NewSharedInformerFactory(cfg.Client, cfg.Resync)
	c := &Controller{cfg: cfg, factory: f, dirty: make(chan struct{}, 1), metrics: newMetrics(cfg.Registerer),
		pods: f.Core().V1().Pods().Lister(), nss: f.Core().V1().Namespaces().Lister(),
		pols: f.Networking().V1().NetworkPolicies().Lister()}
	c.counters = &counters{last: map[blockedKey]uint64{}, m: c.metrics, log: cfg.Log}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.markDirty() },
		UpdateFunc: func(any, any) { c.markDirty() },
		DeleteFunc: func(any) { c.markDirty() },
	}
	for _, inf := range []cache.SharedIndexInformer{f.Core().V1().Pods().Informer(),
		f.Core().V1().Namespaces().Informer(), f.Networking().V1().NetworkPolicies().Informer()} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, fmt.Errorf("add event handler: %w", err)
		}
	}
	return c, nil
}

// Notify makes the controller send every successful load to ch (dropping
// it if ch is full). Call before Run.
func (c *Controller) Notify(ch chan Applied) { c.applied = ch }

func (c *Controller) markDirty() {
	select {
	case c.dirty <- struct{}{}:
	default:
	}
}

// Run syncs the informers, loads the first table and then one per batch
// of changes until ctx ends. It fails only if the caches never sync.
func (c *Controller) Run(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	for typ, ok := range c.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("sync informer cache for %v: %w", typ, ctx.Err())
		}
	}
	c.cfg.Log.Info("informer caches synced; enforcing NetworkPolicies", "node", c.cfg.NodeName)
	c.markDirty()
	poll := time.NewTicker(c.cfg.PollInterval)
	defer poll.Stop()
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-poll.C:
			c.pollBlocked()
		case <-retry:
			retry = nil
			c.markDirty()
		case <-c.dirty:
			if err := c.sync(); err != nil {
				c.metrics.errors.Inc()
				c.cfg.Log.Error("enforce NetworkPolicies; retrying in 1s", "err", err)
				retry = time.After(time.Second)
			}
		}
	}
}

func (c *Controller) pollBlocked() {
	list, err := c.cfg.Enforcer.Blocked()
	if err != nil {
		c.cfg.Log.Debug("read blocked-connection counters", "err", err)
		return
	}
	c.counters.observe(list)
}

// sync translates the informers' current view and loads it.
func (c *Controller) sync() error {
	start := time.Now()
	in, err := c.input()
	if err != nil {
		return err
	}
	m := npc.Translate(in)
	c.pollBlocked() // the swap restarts the kernel counters: read them first
	st, err := c.cfg.Enforcer.Apply(m)
	if err != nil {
		return err
	}
	c.counters.reset()
	d := time.Since(start)
	c.metrics.rules.Set(float64(st.Rules))
	c.metrics.elements.Set(float64(st.Elements))
	c.metrics.syncSecs.Observe(d.Seconds())
	for _, w := range m.Warnings {
		c.cfg.Log.Warn("NetworkPolicy part not enforced", "reason", w)
	}
	c.cfg.Log.Debug("loaded policy table", "rules", st.Rules, "sets", st.Sets, "elements", st.Elements, "took", d)
	if c.applied != nil {
		select {
		case c.applied <- Applied{Stats: st, Model: m, Duration: d}:
		default:
		}
	}
	return nil
}

func (c *Controller) input() (npc.Input, error) {
	var in npc.Input
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return in, fmt.Errorf("list pods: %w", err)
	}
	for _, p := range pods {
		if pod, ok := podOf(p, c.cfg.NodeName); ok {
			in.Pods = append(in.Pods, pod)
		}
	}
	nss, err := c.nss.List(labels.Everything())
	if err != nil {
		return in, fmt.Errorf("list namespaces: %w", err)
	}
	for _, ns := range nss {
		in.Namespaces = append(in.Namespaces, npc.Namespace{Name: ns.Name, Labels: ns.Labels})
	}
	if in.Policies, err = c.pols.List(labels.Everything()); err != nil {
		return in, fmt.Errorf("list network policies: %w", err)
	}
	return in, nil
}
