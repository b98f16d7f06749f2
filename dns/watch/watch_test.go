package watch

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/seedf75a49c6/weave/dns"
)

// fakeEngine is a Docker engine with fixed containers and networks and an
// event stream the test feeds.
type fakeEngine struct {
	mu         sync.Mutex
	containers map[string]container.InspectResponse
	drivers    map[string]string
	msgs       chan events.Message
	errs       chan error
	subscribed chan struct{}
}

func (f *fakeEngine) Events(ctx context.Context, _ client.EventsListOptions) client.EventsResult {
	f.subscribed <- struct{}{}
	return client.EventsResult{Messages: f.msgs, Err: f.errs}
}

func (f *fakeEngine) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out client.ContainerListResult
	for id, c := range f.containers {
		if c.State != nil && c.State.Running {
			out.Items = append(out.Items, container.Summary{ID: id})
		}
	}
	return out, nil
}

func (f *fakeEngine) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return client.ContainerInspectResult{}, errors.New("no such container")
	}
	return client.ContainerInspectResult{Container: c}, nil
}

func (f *fakeEngine) NetworkInspect(_ context.Context, id string, _ client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	d, ok := f.drivers[id]
	if !ok {
		return client.NetworkInspectResult{}, errors.New("no such network")
	}
	var r client.NetworkInspectResult
	r.Network.Driver = d
	return r, nil
}

func ctr(id, host, domain string, running bool, nets map[string]string) container.InspectResponse {
	c := container.InspectResponse{ID: id, State: &container.State{Running: running},
		Config:          &container.Config{Hostname: host, Domainname: domain},
		NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{}}}
	for netID, ip := range nets {
		c.NetworkSettings.Networks[netID] = &network.EndpointSettings{NetworkID: netID, IPAddress: netip.MustParseAddr(ip)}
	}
	return c
}

func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWatcherNamesContainersOnWeaveNetworks(t *testing.T) {
	eng := &fakeEngine{
		drivers: map[string]string{"wnet": "weavemesh", "bridge": "bridge"},
		containers: map[string]container.InspectResponse{
			"running1": ctr("running1", "db", "weave.local", true, map[string]string{"wnet": "10.32.0.1", "bridge": "172.17.0.2"}),
			"nodomain": ctr("nodomain", "abc123", "", true, map[string]string{"wnet": "10.32.0.9"}),
			"foreign":  ctr("foreign", "x", "example.com", true, map[string]string{"wnet": "10.32.0.8"}),
			"onbridge": ctr("onbridge", "br", "weave.local", true, map[string]string{"bridge": "172.17.0.3"}),
			"later":    ctr("later", "web", "weave.local.", false, map[string]string{"wnet": "10.32.0.2"}),
		},
		msgs: make(chan events.Message), errs: make(chan error, 1), subscribed: make(chan struct{}, 4),
	}
	ns, err := dns.New(dns.Config{OurName: 0xaa0000000001, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{Engine: eng, Registry: ns, Domain: "weave.local.", Retry: 10 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	<-eng.subscribed
	await(t, "running container named", func() bool { return len(ns.Lookup("db.weave.local.")) == 1 })
	if got := ns.Lookup("db.weave.local."); got[0] != netip.MustParseAddr("10.32.0.1") {
		t.Errorf("db = %v, want only the weave network's address", got)
	}
	eng.msgs <- events.Message{Type: events.ContainerEventType, Action: events.ActionStart, Actor: events.Actor{ID: "later"}}
	await(t, "started container named", func() bool { return len(ns.Lookup("web.weave.local.")) == 1 })
	eng.msgs <- events.Message{Type: events.ContainerEventType, Action: events.ActionDie, Actor: events.Actor{ID: "running1"}}
	await(t, "dead container's name gone", func() bool { return len(ns.Lookup("db.weave.local.")) == 0 })
	for _, e := range ns.Entries() {
		if e.ContainerID == "nodomain" || e.ContainerID == "foreign" || e.ContainerID == "onbridge" {
			t.Errorf("named a container that should not be: %+v", e)
		}
	}
	// A broken stream is re-subscribed (and running containers re-synced).
	eng.errs <- errors.New("connection reset")
	select {
	case <-eng.subscribed:
	case <-time.After(5 * time.Second):
		t.Fatal("watcher did not re-subscribe after a stream error")
	}
}
