package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// EngineClient is the part of the Docker client the plugin uses.
type EngineClient interface {
	NetworkInspect(ctx context.Context, id string, o client.NetworkInspectOptions) (client.NetworkInspectResult, error)
	NetworkCreate(ctx context.Context, name string, o client.NetworkCreateOptions) (client.NetworkCreateResult, error)
	NetworkRemove(ctx context.Context, id string, o client.NetworkRemoveOptions) (client.NetworkRemoveResult, error)
	NetworkList(ctx context.Context, o client.NetworkListOptions) (client.NetworkListResult, error)
}

// NewClient connects to the Docker engine at host (unix:///var/run/docker.sock,
// tcp://..., as --docker-api takes it), negotiating the API version so the
// engines of older hosts (20.10 speaks 1.41) work.
func NewClient(host string) (*client.Client, error) {
	c, err := client.New(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("Docker client for %s: %w", host, err)
	}
	return c, nil
}

// EnsureNetwork creates the Docker network name (driver and IPAM driver
// weavemesh, multicast on), as Weave 2.8.1 does at launch, unless a
// network of that name exists. It must run while the plugin serves: dockerd
// calls it back during the create.
func EnsureNetwork(ctx context.Context, api EngineClient, name string) (created bool, err error) {
	res, err := api.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	switch {
	case err == nil:
		if d := res.Network.Driver; d != MeshDriverName {
			return false, fmt.Errorf("Docker network %s exists with driver %s, not %s: remove it or use another name", name, d, MeshDriverName)
		}
		return false, nil
	case !cerrdefs.IsNotFound(err):
		return false, fmt.Errorf("inspect Docker network %s: %w", name, err)
	}
	_, err = api.NetworkCreate(ctx, name, client.NetworkCreateOptions{
		Driver:  MeshDriverName,
		IPAM:    &network.IPAM{Driver: MeshDriverName},
		Options: map[string]string{MulticastOption: "true"},
	})
	if err != nil {
		return false, fmt.Errorf("create Docker network %s: %w", name, err)
	}
	return true, nil
}

// RemoveNetwork removes the Docker network name; a missing one is fine.
func RemoveNetwork(ctx context.Context, api EngineClient, name string) (removed bool, err error) {
	_, err = api.NetworkRemove(ctx, name, client.NetworkRemoveOptions{})
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("remove Docker network %s: %w", name, err)
}
