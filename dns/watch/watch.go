// Package watch names Docker containers in weaveDNS, as Weave 2.8.1's
// plugin watcher did: a container on a weave network (driver weave or
// weavemesh) whose host name and domain fall in the weaveDNS domain
// (docker run --hostname db.weave.local) gets that name for its address
// on each such network when it starts, and loses it when it dies.
// Running containers are named when the watch begins, so a restarted
// router catches up.
package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	mdns "github.com/miekg/dns"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/seedf75a49c6/weave/dns"
)

// Engine is the part of the Docker API client the watcher uses;
// *client.Client implements it.
type Engine interface {
	Events(ctx context.Context, options client.EventsListOptions) client.EventsResult
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerInspect(ctx context.Context, id string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	NetworkInspect(ctx context.Context, id string, options client.NetworkInspectOptions) (client.NetworkInspectResult, error)
}

// Drivers are the Docker network drivers whose containers get names.
var Drivers = []string{"weave", "weavemesh"}

// Config configures a Watcher.
type Config struct {
	Engine   Engine
	Registry dns.Registry
	Domain   string        // the weaveDNS domain
	Retry    time.Duration // wait before re-subscribing after an error; default 5 s
	Logger   *slog.Logger
}

// Watcher follows Docker's container events.
type Watcher struct {
	cfg     Config
	log     *slog.Logger
	mu      sync.Mutex
	drivers map[string]string // network ID -> driver (cache)
}

// New checks cfg and builds a watcher; Run starts it.
func New(cfg Config) (*Watcher, error) {
	if cfg.Engine == nil || cfg.Registry == nil {
		return nil, errors.New("DNS watcher: Docker engine and registry are required")
	}
	if cfg.Retry <= 0 {
		cfg.Retry = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Domain = mdns.CanonicalName(cfg.Domain)
	return &Watcher{cfg: cfg, log: cfg.Logger.With("component", "dns-docker"), drivers: map[string]string{}}, nil
}

// Run names the running containers, then follows start and die events
// until ctx ends, re-subscribing after errors.
func (w *Watcher) Run(ctx context.Context) {
	for failures := 0; ctx.Err() == nil; failures++ {
		err := w.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		level := slog.LevelWarn
		if failures > 0 {
			level = slog.LevelDebug // said once; do not fill the log while Docker is away
		}
		w.log.Log(ctx, level, "Docker events stopped; retrying", "err", err, "in", w.cfg.Retry)
		select {
		case <-ctx.Done():
		case <-time.After(w.cfg.Retry):
		}
	}
}

// follow subscribes first (so nothing is missed), then syncs the running
// containers, then handles events until the stream fails.
func (w *Watcher) follow(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := client.Filters{}.Add("type", string(events.ContainerEventType)).
		Add("event", string(events.ActionStart), string(events.ActionDie))
	res := w.cfg.Engine.Events(ctx, client.EventsListOptions{Filters: f})
	list, err := w.cfg.Engine.ContainerList(ctx, client.ContainerListOptions{})
	if err != nil {
		return fmt.Errorf("list Docker containers: %w", err)
	}
	for _, c := range list.Items {
		w.started(ctx, c.ID)
	}
	for {
		select {
		case m := <-res.Messages:
			w.Handle(ctx, m)
		case err := <-res.Err:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Handle acts on one Docker event.
func (w *Watcher) Handle(ctx context.Context, m events.Message) {
	if m.Type != events.ContainerEventType || m.Actor.ID == "" {
		return
	}
	switch m.Action {
	case events.ActionStart:
		w.started(ctx, m.Actor.ID)
	case events.ActionDie:
		if err := w.cfg.Registry.ContainerDied(m.Actor.ID); err != nil {
			w.log.Warn("remove DNS names of a dead container", "container", m.Actor.ID, "err", err)
		}
	}
}

// started registers the container's name on each of its weave networks.
func (w *Watcher) started(ctx context.Context, id string) {
	res, err := w.cfg.Engine.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		w.log.Warn("inspect Docker container", "container", id, "err", err)
		return
	}
	ct := res.Container
	if ct.Config == nil || ct.NetworkSettings == nil {
		return
	}
	fqdn := w.name(ct.Config.Hostname, ct.Config.Domainname)
	if fqdn == "" {
		return
	}
	for _, ep := range ct.NetworkSettings.Networks {
		if ep == nil || !ep.IPAddress.Is4() || !w.ours(ctx, ep.NetworkID) {
			continue
		}
		if err := w.cfg.Registry.AddEntry(fqdn, ct.ID, ep.IPAddress); err != nil {
			w.log.Warn("register DNS name of a Docker container", "container", ct.ID, "name", fqdn, "err", err)
		}
	}
}

// name is host.domain when that is inside our domain, else "".
func (w *Watcher) name(host, domain string) string {
	if host == "" || domain == "" {
		return ""
	}
	fq := mdns.CanonicalName(host + "." + strings.TrimSuffix(domain, "."))
	if fq == w.cfg.Domain || !mdns.IsSubDomain(w.cfg.Domain, fq) {
		return ""
	}
	return mdns.Fqdn(host + "." + strings.TrimSuffix(domain, "."))
}

// ours reports whether a network's driver is weave's (cached per ID).
func (w *Watcher) ours(ctx context.Context, networkID string) bool {
	w.mu.Lock()
	d, ok := w.drivers[networkID]
	w.mu.Unlock()
	if !ok {
		res, err := w.cfg.Engine.NetworkInspect(ctx, networkID, client.NetworkInspectOptions{})
		if err != nil {
			w.log.Debug("inspect Docker network", "network", networkID, "err", err)
			return false
		}
		d = res.Network.Driver
		w.mu.Lock()
		w.drivers[networkID] = d
		w.mu.Unlock()
	}
	for _, o := range Drivers {
		if d == o {
			return true
		}
	}
	return false
}
