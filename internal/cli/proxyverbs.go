package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// errNoProxy is what env and config say when no proxy listens.
var errNoProxy = errors.New("weave proxy is not running")

// proxyAddr is the proxy's first listen address, as a client dials it:
// 0.0.0.0 becomes the host of DOCKER_HOST when that is TCP, else
// 127.0.0.1 (2.8.1's PROXY_HOST).
func (c *cmd) proxyAddr(ctx context.Context) (string, error) {
	addrs, err := c.api.ProxyAddrs(ctx)
	if noRoute(err) {
		return "", errNoProxy
	}
	if err != nil {
		return "", err
	}
	if len(addrs) == 0 {
		return "", errNoProxy
	}
	a := addrs[0]
	if rest, ok := strings.CutPrefix(a, "tcp://0.0.0.0:"); ok {
		a = "tcp://" + net.JoinHostPort(c.proxyHost(), rest)
	}
	return a, nil
}

func (c *cmd) proxyHost() string {
	if u, err := url.Parse(c.OrigDockerHost); err == nil && u.Scheme == "tcp" && u.Hostname() != "" {
		return u.Hostname()
	}
	return "127.0.0.1"
}

// runEnv prints what `eval $(weave env)` needs: DOCKER_HOST pointing at
// the proxy, the old value kept in ORIG_DOCKER_HOST; --restore prints the
// way back.
func runEnv(ctx context.Context, c *cmd, args []string) error {
	switch {
	case len(args) == 1 && args[0] == "--restore":
		fmt.Fprintf(c.Stdout, "export DOCKER_HOST=%s\n", c.RestoreDockerHost)
		return nil
	case len(args) > 0:
		return usagef("env: unexpected arguments %q (use [--restore])", args)
	}
	addr, err := c.proxyAddr(ctx)
	if err != nil {
		return err
	}
	restore := ""
	if addr != c.OrigDockerHost {
		restore = " ORIG_DOCKER_HOST=" + c.OrigDockerHost
	}
	fmt.Fprintf(c.Stdout, "export DOCKER_HOST=%s%s\n", addr, restore)
	return nil
}

// runConfig prints the docker client flag for the proxy: docker $(weave config) ps.
func runConfig(ctx context.Context, c *cmd, args []string) error {
	if len(args) > 0 {
		return usagef("config: unexpected arguments %q", args)
	}
	addr, err := c.proxyAddr(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.Stdout, "-H=%s\n", addr)
	return nil
}

// runPrime waits until the IPAM ring exists, so that later allocations do
// not wait for consensus.
func runPrime(ctx context.Context, c *cmd, args []string) error {
	if len(args) > 0 {
		return usagef("prime: unexpected arguments %q", args)
	}
	err := c.api.Prime(ctx)
	if noRoute(err) {
		return fmt.Errorf("prime: this router runs without IPAM (--ipalloc-range \"\"): %w", err)
	}
	return err
}

// runBridgeType prints the kind of the weave bridge: always "bridge"
// (a Linux bridge; our fast path is VXLAN beside it, not ODP).
func runBridgeType(_ context.Context, c *cmd, args []string) error {
	if len(args) > 0 {
		return usagef("bridge-type: unexpected arguments %q", args)
	}
	_, _, ok, err := c.Kernel.BridgeAddrs(c.Bridge)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("Weave bridge %s not found. Please run 'weave launch' and try again", c.Bridge)
	}
	fmt.Fprintln(c.Stdout, "bridge")
	return nil
}

// runDockerBridgeIP prints the Docker bridge's first IPv4 address.
func runDockerBridgeIP(_ context.Context, c *cmd, args []string) error {
	if len(args) > 0 {
		return usagef("docker-bridge-ip: unexpected arguments %q", args)
	}
	_, addrs, ok, err := c.Kernel.BridgeAddrs(c.DockerBridge)
	if err != nil {
		return err
	}
	if !ok || len(addrs) == 0 {
		return fmt.Errorf("docker-bridge-ip: no IPv4 address on %s", c.DockerBridge)
	}
	fmt.Fprintln(c.Stdout, addrs[0].Addr())
	return nil
}

// runAttachBridge joins another bridge (default the Docker bridge) to the
// weave bridge with a veth pair, so its containers reach weave's.
func runAttachBridge(_ context.Context, c *cmd, args []string) error {
	other := c.DockerBridge
	switch {
	case len(args) == 1:
		other = args[0]
	case len(args) > 1:
		return usagef("attach-bridge: unexpected arguments %q", args[1:])
	}
	if _, _, ok, err := c.Kernel.BridgeAddrs(c.Bridge); err != nil || !ok {
		return fmt.Errorf("Weave bridge %s not found. Please run 'weave launch' and try again", c.Bridge)
	}
	return c.Kernel.AttachBridge(c.Bridge, other)
}
