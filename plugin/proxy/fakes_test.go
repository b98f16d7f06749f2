package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"sync"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/client"
)

// fakeEngine is Docker's state as the proxy reads it.
type fakeEngine struct {
	mu         sync.Mutex
	images     map[string]image.InspectResponse
	containers map[string]container.InspectResponse
	msgs       chan events.Message
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{images: map[string]image.InspectResponse{}, containers: map[string]container.InspectResponse{},
		msgs: make(chan events.Message)}
}

func (f *fakeEngine) image(name string, ep, cmd []string) {
	// through JSON: the config types live in modules we do not import
	data, _ := json.Marshal(map[string]any{"Config": map[string]any{"Entrypoint": ep, "Cmd": cmd}})
	var r image.InspectResponse
	if err := json.Unmarshal(data, &r); err != nil {
		panic(err)
	}
	f.images[name] = r
}

func (f *fakeEngine) ContainerInspect(_ context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return client.ContainerInspectResult{}, errNotFound{}
	}
	return client.ContainerInspectResult{Container: c}, nil
}

func (f *fakeEngine) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out client.ContainerListResult
	for id, c := range f.containers {
		st := container.StateExited
		if c.State != nil && c.State.Running {
			st = container.StateRunning
		}
		out.Items = append(out.Items, container.Summary{ID: id, State: st})
	}
	return out, nil
}

func (f *fakeEngine) ImageInspect(_ context.Context, name string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	r, ok := f.images[name]
	if !ok {
		return client.ImageInspectResult{}, errNotFound{}
	}
	return client.ImageInspectResult{InspectResponse: r}, nil
}

func (f *fakeEngine) Events(context.Context, client.EventsListOptions) client.EventsResult {
	return client.EventsResult{Messages: f.msgs, Err: make(chan error)}
}

type errNotFound struct{}

func (errNotFound) Error() string { return "No such object" }
func (errNotFound) NotFound()     {}

// fakeNet records what the proxy asks of the router.
type fakeNet struct {
	mu       sync.Mutex
	next     int
	held     map[string][]netip.Prefix
	attached map[int][]netip.Prefix // pid -> ethwe addresses
	calls    []string
}

func newFakeNet() *fakeNet {
	return &fakeNet{held: map[string][]netip.Prefix{}, attached: map[int][]netip.Prefix{}}
}

func (n *fakeNet) Allocate(_ context.Context, id string, subnet netip.Prefix) (netip.Prefix, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !subnet.IsValid() {
		subnet = netip.MustParsePrefix("10.32.0.0/12")
	}
	for _, h := range n.held[id] {
		if subnet.Contains(h.Addr()) {
			return h, nil
		}
	}
	n.next++
	a := subnet.Addr().As4()
	a[3] += byte(n.next)
	p := netip.PrefixFrom(netip.AddrFrom4(a), subnet.Bits())
	n.held[id] = append(n.held[id], p)
	return p, nil
}

func (n *fakeNet) Claim(_ context.Context, id string, addr netip.Prefix) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.held[id] = append(n.held[id], addr)
	return nil
}

func (n *fakeNet) Release(id string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, "release "+id)
	delete(n.held, id)
	return nil
}

func (n *fakeNet) Attach(id string, pid int, addrs []netip.Prefix, noMcast bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if pid < 0 {
		return errors.New("boom")
	}
	n.attached[pid] = addrs
	n.calls = append(n.calls, "attach "+id)
	return nil
}

func (n *fakeNet) Addrs(pid int) (net.HardwareAddr, []netip.Prefix, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	a, ok := n.attached[pid]
	return net.HardwareAddr{2, 0, 0, 0, 0, 1}, a, ok
}

func (n *fakeNet) Detached(string) {}

// fakeDNS records names.
type fakeDNS struct {
	mu      sync.Mutex
	entries map[string][]string // fqdn -> "id ip"
	died    []string
}

func (d *fakeDNS) AddEntry(fqdn, id string, addr netip.Addr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.entries == nil {
		d.entries = map[string][]string{}
	}
	d.entries[fqdn] = append(d.entries[fqdn], id+" "+addr.String())
	return nil
}

func (d *fakeDNS) ContainerDied(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.died = append(d.died, id)
	return nil
}
