package daemon

import (
	"context"
	"path/filepath"
	"time"

	"github.com/seedf75a49c6/weave/plugin/docker"
)

const (
	// PluginStateFile keeps the Docker networks the plugin was told about
	// (in the data dir; weave reset deletes it with the other weave* files).
	PluginStateFile = "weave-docker-networks.json"
	// ringWaitAtStart is how long start-up waits for the IPAM ring before
	// it creates the Docker network "weave" itself (a lone host has it at
	// once); without a ring by then, the network is created in the
	// background once there is one, so launch is not held up by peers.
	ringWaitAtStart = 2 * time.Second
	// ringWaitRetry bounds each background wait for the ring.
	ringWaitRetry = 30 * time.Second
	// dockerCreateTimeout bounds one network create: dockerd calls back
	// into the plugin (RequestPool, the gateway address) during it.
	dockerCreateTimeout = 60 * time.Second
	dockerNetworkRetry  = 5 * time.Second
)

// startPlugin serves the Docker plugin sockets (after the HTTP API, as
// 2.8.1 orders it) and makes sure the Docker network "weave" exists.
func (d *daemon) startPlugin(ctx context.Context, b *backend) error {
	c := d.cfg
	if !c.PluginEnabled() {
		return nil
	}
	cfg := docker.Config{
		Bridge: c.Bridge, NetSocket: c.PluginSocket, MeshSocket: c.PluginMeshSocket, V2: c.PluginV2,
		StateFile: filepath.Join(c.DataDir, PluginStateFile),
		Logger:    d.log.With("component", "plugin"),
	}
	if b.ipam != nil {
		cfg.IPAM = b.ipam
	}
	p, err := docker.New(cfg)
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	d.onStop(p.Close)
	switch {
	case c.DockerAPI == "":
		d.log.Info("Docker plugin without --docker-api: the Docker network is not created", "network", docker.DefaultNetworkName)
		return nil
	case b.ipam == nil:
		d.log.Info("Docker plugin without IPAM (--ipalloc-range \"\"): weavemesh serves no IpamDriver and the Docker network is not created", "network", docker.DefaultNetworkName)
		return nil
	}
	api, err := docker.NewClient(c.DockerAPI)
	if err != nil {
		return err
	}
	d.onStop(func() { _ = api.Close() })
	if !d.dockerReady(ctx, b, p, api, ringWaitAtStart) {
		d.spawn(func() { d.retryDockerNetwork(ctx, b, p, api) })
	}
	return nil
}

// dockerReady waits up to ringWait for the IPAM ring (the gateway address
// needs it, and a create that dockerd cannot finish is worse than a late
// one), makes sure the network exists, then releases what containers
// removed during a downtime left allocated. It reports success.
func (d *daemon) dockerReady(ctx context.Context, b *backend, p *docker.Plugin, api docker.EngineClient, ringWait time.Duration) bool {
	rctx, cancel := context.WithTimeout(ctx, ringWait)
	err := b.ipam.Prime(rctx)
	cancel()
	if err != nil {
		d.log.Info("Docker network waits for the IPAM ring", "network", docker.DefaultNetworkName, "err", err)
		return false
	}
	if !d.ensureDockerNetwork(ctx, api) {
		return false
	}
	ctx, cancel = context.WithTimeout(ctx, dockerCreateTimeout)
	defer cancel()
	if _, err := p.ReleaseStale(ctx, api); err != nil {
		d.log.Warn("cannot check for addresses of removed Docker containers", "err", err)
	}
	return true
}

// ensureDockerNetwork tries once to create the network; it reports success.
func (d *daemon) ensureDockerNetwork(ctx context.Context, api docker.EngineClient) bool {
	ctx, cancel := context.WithTimeout(ctx, dockerCreateTimeout)
	defer cancel()
	created, err := docker.EnsureNetwork(ctx, api, docker.DefaultNetworkName)
	if err != nil {
		d.log.Warn("cannot create the Docker network yet; retrying", "network", docker.DefaultNetworkName, "err", err)
		return false
	}
	if created {
		d.log.Info("Docker network created", "network", docker.DefaultNetworkName, "driver", docker.MeshDriverName)
	}
	return true
}

func (d *daemon) retryDockerNetwork(ctx context.Context, b *backend, p *docker.Plugin, api docker.EngineClient) {
	t := time.NewTicker(dockerNetworkRetry)
	defer t.Stop()
	for {
		if d.dockerReady(ctx, b, p, api, ringWaitRetry) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
