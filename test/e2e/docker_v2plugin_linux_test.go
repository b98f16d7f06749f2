package e2e

import (
	"context"
	"fmt"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// v2PluginRange is the IPAM range of the managed plugin's router.
const v2PluginRange = "10.47.0.0/16"

// v2PluginName is the managed plugin the test creates and removes.
const v2PluginName = "weave-e2e-plugin:latest"

// The plugin's modes (plugin/docker/v2/config.json's args): its one
// socket weave.sock carries the IPAM driver and the local-scope network
// driver (the default), or the global-scope one for a swarm.
const (
	v2PluginLocalArgs = "--plugin --plugin-mesh-socket /run/docker/plugins/weave.sock --plugin-socket /run/docker/plugins/weave-unused.sock"
	v2PluginSwarmArgs = "--plugin-v2 --plugin-socket /run/docker/plugins/weave.sock"
)

// TestDockerManagedPlugin installs weaver as a Docker v2 managed plugin
// from a local rootfs directory and config.json (`docker plugin create`,
// no registry) and enables it: its router runs in the host's network
// namespace and serves one socket, weave.sock, with the network and IPAM
// drivers. A network created with it carries containers that ping each
// other. Then, on a single-node swarm under the same dockerd, a swarm-scoped
// attachable network of the plugin does the same. Everything is undone at
// the end: the swarm left, the plugin disabled and removed, the root
// namespace as it was (checked).
func TestDockerManagedPlugin(t *testing.T) {
	requireDocker(t)
	before := rootSnapshot(t)
	t.Cleanup(func() { checkRestored(t, before) }) // last: after the dockerHost's cleanup
	d := newDockerHost(t)
	// One fixed name, not one per run: dockerd never forgets a removed
	// plugin's global-scope driver (docs/docker.md), but a new plugin of the
	// same name takes its place instead of adding to them.
	plugin := v2PluginName
	if out, err := docker(t, "plugin", "inspect", "-f", "{{.ID}}", plugin); err == nil {
		t.Fatalf("a Docker plugin %s already exists (%s); not touching it", plugin, out)
	}
	api := freeLoopbackAddr(t) // the plugin's router shares the host's network namespace
	dir := d.pluginDir()
	swarmed := false
	t.Cleanup(func() { d.removeManaged(plugin, before, swarmed) })
	mustDocker(t, "plugin", "create", plugin, dir)
	mustDocker(t, "plugin", "set", plugin, "args="+pluginArgs(v2PluginLocalArgs, api), "WEAVE_PASSWORD=e2e-secret")
	mustDocker(t, "plugin", "enable", plugin)
	if out := mustDocker(t, "plugin", "inspect", "-f", "{{.Enabled}}", plugin); out != "true" {
		t.Fatalf("plugin %s enabled = %q", plugin, out)
	}

	netnstest.WaitFor(t, dockerWait, "the plugin's router reports encryption on (WEAVE_PASSWORD)", func() error {
		body, err := d.pluginRouter(api).get("/status")
		return expectIn(body, err, "Encryption: enabled")
	})
	local := d.tag + "-v2"
	mustDocker(t, "network", "create", "--driver", plugin, "--ipam-driver", plugin, "--label", d.label, local)
	d.removeReleases(api, d.pingPair(local, "l"))
	mustDocker(t, "network", "rm", local)
	mustDocker(t, "plugin", "disable", plugin)
	mustDocker(t, "plugin", "set", plugin, "args="+pluginArgs(v2PluginSwarmArgs, api))
	mustDocker(t, "plugin", "enable", plugin)

	if state := mustDocker(t, "info", "-f", "{{.Swarm.LocalNodeState}}"); state != "inactive" {
		t.Fatalf("this dockerd is already in a swarm (%s); not touching it", state)
	}
	swarmed = true
	mustDocker(t, "swarm", "init", "--advertise-addr", rootIP)
	swarm := d.tag + "-sw"
	mustDocker(t, "network", "create", "--attachable", "--driver", plugin, "--ipam-driver", plugin,
		"--label", d.label, swarm)
	d.removeReleases(api, d.pingPair(swarm, "s"))
}

// removeReleases removes the containers; the plugin's IPAM (GET /ip of
// its router) must then hold none of their addresses.
func (d *dockerHost) removeReleases(api string, cs []dockerCtr) {
	d.t.Helper()
	for _, c := range cs {
		mustDocker(d.t, "rm", "-f", c.name)
	}
	netnstest.WaitFor(d.t, dockerWait, "the plugin's IPAM releases the removed containers' addresses", func() error {
		body, err := d.pluginRouter(api).get("/ip")
		if err != nil {
			return err
		}
		for _, c := range cs {
			if strings.Contains(body, `"`+c.ip+`/`) {
				return fmt.Errorf("%s of removed %s is still held: %s", c.ip, c.name, body)
			}
		}
		return nil
	})
}

// pluginRouter is d with the plugin's router as its HTTP API (for get).
func (d *dockerHost) pluginRouter(api string) *dockerHost {
	p := *d
	p.http = api
	return &p
}

// pingPair runs two containers on network and has the first ping the
// second; both addresses must come from the plugin's IPAM range.
func (d *dockerHost) pingPair(network, prefix string) []dockerCtr {
	d.t.Helper()
	a, b := d.run(prefix+"1", network), d.run(prefix+"2", network)
	for _, c := range []dockerCtr{a, b} {
		if !strings.HasPrefix(c.ip, "10.47.") {
			info, _ := docker(d.t, "network", "inspect", network)
			d.t.Fatalf("%s on %s got %q, not an address of the plugin's range %s; the network:\n%s", c.name, network, c.ip, v2PluginRange, info)
		}
	}
	d.pingFrom(a, b.ip)
	d.t.Logf("network %s: %s (%s) pings %s (%s)", network, a.name, a.ip, b.name, b.ip)
	return []dockerCtr{a, b}
}

// pluginDir builds the plugin's directory with the product's script
// (make docker-plugin), from the weaver TestMain built.
func (d *dockerHost) pluginDir() string {
	root, err := netnstest.ModuleRoot()
	if err != nil {
		d.t.Fatal(err)
	}
	dir := d.t.TempDir()
	weaver := filepath.Join(filepath.Dir(build.weave), "bin", "weaver")
	if out, err := osexec.Command("sh", filepath.Join(root, "plugin/docker/v2/build.sh"), weaver, dir).CombinedOutput(); err != nil {
		d.t.Fatalf("plugin/docker/v2/build.sh: %v\n%s", err, out)
	}
	return dir
}

// pluginArgs are the weaver flags the test sets (docker plugin set args=):
// mode plus its own range and API address, no DNS, no fast path.
func pluginArgs(mode, httpAddr string) string {
	return mode + " --ipalloc-range " + v2PluginRange + " --http-addr " + httpAddr + " --no-dns --no-fastdp --nickname v2plugin"
}

// rootState is what the managed-plugin test must leave as it found it.
type rootState struct {
	networks, plugins, chains []string
}

func rootSnapshot(t *testing.T) rootState {
	t.Helper()
	return rootState{
		networks: strings.Fields(mustDocker(t, "network", "ls", "--format", "{{.Name}}")),
		plugins:  strings.Fields(mustDocker(t, "plugin", "ls", "--format", "{{.Name}}")),
		chains:   iptablesChains(t),
	}
}

// iptablesChains lists "table chain" for every chain of iptables-save.
func iptablesChains(t *testing.T) []string {
	t.Helper()
	out, err := osexec.Command("iptables-save").Output()
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	var chains []string
	table := ""
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "*"):
			table = l[1:]
		case strings.HasPrefix(l, ":"):
			chains = append(chains, table+" "+strings.Fields(l[1:])[0])
		}
	}
	return chains
}

// removeManaged undoes the test in dependency order: our containers and
// networks (dockerd needs the plugin for that), the swarm (and what swarm
// init made: docker_gwbridge, the DOCKER-INGRESS chain), then the plugin.
// The dockerHost cleanup after it resets the bridge and rules the plugin's
// router made, and checks the rest.
func (d *dockerHost) removeManaged(plugin string, before rootState, swarmed bool) {
	t := d.t
	if t.Failed() {
		if out, err := osexec.Command("sh", "-c", "journalctl -u docker --no-pager -n 40 2>/dev/null").Output(); err == nil {
			t.Logf("dockerd log (tail):\n%s", out)
		}
	}
	if ids := d.listIDs("ps", "-aq"); len(ids) > 0 {
		_, _ = docker(t, append([]string{"rm", "-f"}, ids...)...)
	}
	if nets := d.listIDs("network", "ls", "-q"); len(nets) > 0 {
		if out, err := docker(t, append([]string{"network", "rm"}, nets...)...); err != nil {
			t.Errorf("cleanup: %v %s", err, out)
		}
	}
	if swarmed {
		// Slow on a dockerd that still knows removed plugins' global
		// drivers: about 15 s of DiscoverNew retries for each.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		out, err := osexec.CommandContext(ctx, "docker", "swarm", "leave", "--force").CombinedOutput()
		cancel()
		if err != nil && !strings.Contains(string(out), "not part of a swarm") {
			t.Errorf("cleanup: %v %s", err, out)
		}
		d.removeSwarmLeftovers(before)
	}
	_, _ = docker(t, "plugin", "disable", "-f", plugin)
	if out, err := docker(t, "plugin", "rm", "-f", plugin); err != nil && !strings.Contains(out, "not found") {
		t.Errorf("cleanup: %v %s", err, out)
	}
}

// removeSwarmLeftovers removes what `docker swarm leave` keeps of `docker
// swarm init`: the docker_gwbridge network and the DOCKER-INGRESS chain,
// unless they were there before.
func (d *dockerHost) removeSwarmLeftovers(before rootState) {
	t := d.t
	if !slices.Contains(before.networks, "docker_gwbridge") {
		err := netnstest.Poll(dockerWait, func() error {
			if _, err := docker(t, "network", "inspect", "docker_gwbridge"); err != nil {
				return nil
			}
			out, err := docker(t, "network", "rm", "docker_gwbridge")
			if err != nil {
				return fmt.Errorf("%v %s", err, out)
			}
			return nil
		})
		if err != nil {
			t.Errorf("cleanup: remove docker_gwbridge: %v", err)
		}
	}
	if !slices.Contains(before.chains, "filter DOCKER-INGRESS") && slices.Contains(iptablesChains(t), "filter DOCKER-INGRESS") {
		for _, args := range [][]string{{"-D", "FORWARD", "-j", "DOCKER-INGRESS"}, {"-F", "DOCKER-INGRESS"}, {"-X", "DOCKER-INGRESS"}} {
			_ = osexec.Command("iptables", append([]string{"-w"}, args...)...).Run()
		}
	}
	if !slices.Contains(before.chains, "nat DOCKER-INGRESS") && slices.Contains(iptablesChains(t), "nat DOCKER-INGRESS") {
		for _, args := range [][]string{{"-D", "PREROUTING", "-m", "addrtype", "--dst-type", "LOCAL", "-j", "DOCKER-INGRESS"},
			{"-D", "OUTPUT", "-m", "addrtype", "--dst-type", "LOCAL", "-j", "DOCKER-INGRESS"}, {"-F", "DOCKER-INGRESS"}, {"-X", "DOCKER-INGRESS"}} {
			_ = osexec.Command("iptables", append([]string{"-w", "-t", "nat"}, args...)...).Run()
		}
	}
}

// checkRestored: the swarm is gone and the networks, plugins and
// iptables chains are those of before the test.
func checkRestored(t *testing.T, before rootState) {
	if state, _ := docker(t, "info", "-f", "{{.Swarm.LocalNodeState}}"); state != "inactive" {
		t.Errorf("cleanup left this dockerd in a swarm (%s)", state)
	}
	after := rootSnapshot(t)
	for _, c := range []struct {
		what          string
		before, after []string
	}{{"Docker network", before.networks, after.networks}, {"Docker plugin", before.plugins, after.plugins}, {"iptables chain", before.chains, after.chains}} {
		for _, x := range c.after {
			if !slices.Contains(c.before, x) {
				t.Errorf("cleanup left %s %q", c.what, x)
			}
		}
	}
}
