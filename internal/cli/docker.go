package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Names shared with plugin/docker (which the CLI may not import).
const (
	dockerNetwork = "weave"     // the Docker network weaver creates with --plugin
	meshDriver    = "weavemesh" // its driver
	dockerTimeout = 10 * time.Second
	dockerPing    = 2 * time.Second // launch's "does a Docker engine answer?"
)

// dockerHost is the engine address: DOCKER_HOST's unix socket or the default.
func (c *cmd) dockerHost() string { return "unix://" + c.DockerSocket }

// dockerClient connects to the engine at host (nothing is dialled yet).
func dockerClient(host string) (*client.Client, error) {
	api, err := client.New(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("Docker client for %s: %w", host, err)
	}
	return api, nil
}

// dockerAnswers reports whether a Docker engine answers at host.
func dockerAnswers(ctx context.Context, host string) bool {
	api, err := dockerClient(host)
	if err != nil {
		return false
	}
	defer api.Close()
	ctx, cancel := context.WithTimeout(ctx, dockerPing)
	defer cancel()
	_, err = api.Ping(ctx, client.PingOptions{})
	return err == nil
}

// dockerTarget asks the Docker engine for the container's ID and init pid.
func (c *cmd) dockerTarget(ctx context.Context, name string) (target, error) {
	notFound := fmt.Errorf("target %s: not a network namespace in %s, a PID, or a Docker container", name, c.NetnsDir)
	if _, err := os.Stat(c.DockerSocket); err != nil {
		return target{}, fmt.Errorf("%w (no Docker socket at %s)", notFound, c.DockerSocket)
	}
	api, err := dockerClient(c.dockerHost())
	if err != nil {
		return target{}, err
	}
	defer api.Close()
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	res, err := api.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		return target{}, notFound
	case err != nil:
		return target{}, fmt.Errorf("ask Docker about %s: %w", name, err)
	}
	ct := res.Container
	if ct.State == nil || !ct.State.Running || ct.State.Pid == 0 {
		return target{}, fmt.Errorf("container %s is not running", name)
	}
	host := ""
	if ct.Config != nil {
		host = ct.Config.Hostname
		if host != "" && ct.Config.Domainname != "" {
			host += "." + ct.Config.Domainname
		}
	}
	return target{ID: ct.ID, NetNS: c.procNetNS(ct.State.Pid), Hostname: host, HostsPath: ct.HostsPath}, nil
}

func (c *cmd) procNetNS(pid int) string {
	return filepath.Join(c.ProcDir, strconv.Itoa(pid), "ns", "net")
}

// localDocker connects to the engine on DockerSocket when the socket
// exists (ok false otherwise), with ctx bounded by timeout; done releases both.
func (c *cmd) localDocker(ctx context.Context, timeout time.Duration) (api *client.Client, tctx context.Context, done func(), ok bool) {
	if _, err := os.Stat(c.DockerSocket); err != nil {
		return nil, ctx, func() {}, false
	}
	api, err := dockerClient(c.dockerHost())
	if err != nil {
		return nil, ctx, func() {}, false
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	return api, tctx, func() { cancel(); _ = api.Close() }, true
}

// dockerContainers lists running Docker containers as targets; no engine
// means none.
func (c *cmd) dockerContainers(ctx context.Context) []target {
	api, ctx, done, ok := c.localDocker(ctx, dockerTimeout)
	if !ok {
		return nil
	}
	defer done()
	list, err := api.ContainerList(ctx, client.ContainerListOptions{})
	if err != nil {
		c.Logger.Debug("cannot list Docker containers", "err", err)
		return nil
	}
	var out []target
	for _, s := range list.Items {
		res, err := api.ContainerInspect(ctx, s.ID, client.ContainerInspectOptions{})
		if err != nil || res.Container.State == nil || res.Container.State.Pid == 0 {
			continue
		}
		out = append(out, target{ID: s.ID, NetNS: c.procNetNS(res.Container.State.Pid)})
	}
	return out
}

// removeDockerNetwork removes the Docker network "weave" of driver
// weavemesh, while the router (its plugin) still runs: dockerd calls the
// plugin during the removal. No engine, or no such network, is fine.
func (c *cmd) removeDockerNetwork(ctx context.Context) error {
	if c.runningPID() == 0 || !dockerAnswers(ctx, c.dockerHost()) {
		return nil
	}
	api, err := dockerClient(c.dockerHost())
	if err != nil {
		return err
	}
	defer api.Close()
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	res, err := api.NetworkInspect(ctx, dockerNetwork, client.NetworkInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("inspect Docker network %s: %w", dockerNetwork, err)
	case res.Network.Driver != meshDriver:
		c.Logger.Warn("leaving a Docker network that is not ours", "network", dockerNetwork, "driver", res.Network.Driver)
		return nil
	}
	_, err = api.NetworkRemove(ctx, res.Network.ID, client.NetworkRemoveOptions{})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove Docker network %s (remove its containers first): %w", dockerNetwork, err)
	}
	return nil
}

// hostNetns reports whether we run in dockerd's network namespace (found
// through its pid file, else that of PID 1), where it wires its
// containers: a router elsewhere cannot hand Docker interfaces, so launch
// does not turn the plugin on there.
func (c *cmd) hostNetns() bool {
	pid := "1"
	if data, err := os.ReadFile(c.DockerPIDFile); err == nil {
		pid = strings.TrimSpace(string(data))
	}
	self, err1 := os.Readlink(filepath.Join(c.ProcDir, "self", "ns", "net"))
	other, err2 := os.Readlink(filepath.Join(c.ProcDir, pid, "ns", "net"))
	return err1 == nil && err2 == nil && self == other
}
