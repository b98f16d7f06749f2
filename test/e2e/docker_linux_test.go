package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// TestDockerPlugin runs the machine's dockerd against the router in the
// root namespace, one more host on a namespace underlay (h1): `weave
// launch` turns the plugin on and creates the network weave; containers
// from `docker run --network weave` ping each other and a container on
// h1 across the mesh, with dockerd's FORWARD DROP policy in place; weave
// ps lists them; docker rm releases the address; a user weavemesh network
// with --subnet works and one outside the range is refused; a killed and
// relaunched router keeps a running container's address and reachability;
// weave reset removes the network. The steps share one expensive setup.
func TestDockerPlugin(t *testing.T) {
	d, h1 := startDockerHosts(t)
	d.awaitNetwork()
	c1, c2 := d.run("c1", "weave"), d.run("c2", "weave")
	c3 := d.tp.AddContainer(h1, "c3", "net:default")
	c3IP := containerIP(t, c3.NS)
	d.pingFrom(c1, c2.ip)
	d.pingFrom(c1, c3IP)
	netnstest.WaitFor(t, dockerWait, "c3 (h1) pings c1 (Docker)", func() error {
		_, err := netnstest.Ping(c3.NS, c1.ip, 1)
		return err
	})
	d.checkPS(c1)
	d.checkRoutes(c1)
	d.checkAttach(c1)
	d.checkRelease(c2)
	d.checkUserNetworks(c1)
	d.checkRestart(c1, c3.NS)
	d.checkReset()
}

// startDockerHosts launches the root router (as a user does, so the
// plugin and the proxy come on) and h1's, connected, with dockerd's
// FORWARD DROP policy in place.
func startDockerHosts(t *testing.T) (*dockerHost, *netnstest.Host) {
	d := newDockerHost(t)
	d.forceForwardDrop()
	h1 := d.tp.Host(1)
	d.launch(h1.IP)
	if _, err := d.tp.StartRouter(h1, "--no-fastdp", rootIP); err != nil {
		t.Fatal(err)
	}
	netnstest.WaitFor(t, dockerWait, "h1 connected to the root router", func() error {
		out, err := d.tp.Weave(h1, "status", "connections")
		return expectIn(out, err, "established")
	})
	return d, h1
}

// forceForwardDrop makes sure FORWARD drops by default, as dockerd sets it
// when it starts with ip_forward off; cleanup restores the old policy.
func (d *dockerHost) forceForwardDrop() {
	if d.policy != "DROP" {
		d.t.Logf("FORWARD policy is %q; setting DROP for the test", d.policy)
		if out, err := runRoot("iptables", "-w", "-P", "FORWARD", "DROP"); err != nil {
			d.t.Fatalf("%v %s", err, out)
		}
	}
}

// launch starts the root router the way a user does, dialling peer (its
// IPAM consensus then needs h1, so the network comes once h1 is up); the
// plugin comes on because dockerd answers, and the network weave appears.
// Given no peer, liveness would advertise the first private address,
// docker0's, which no other host reaches.
func (d *dockerHost) launch(peer string) {
	d.t.Helper()
	if out, err := d.weave("launch", "--nickname", "root-"+d.tag, peer); err != nil {
		d.t.Fatalf("%v %s", err, out)
	}
}

// awaitNetwork waits for the Docker network weave that the router creates.
func (d *dockerHost) awaitNetwork() {
	d.t.Helper()
	netnstest.WaitFor(d.t, dockerWait, "Docker network weave (driver weavemesh)", func() error {
		out, err := docker(d.t, "network", "inspect", "-f", "{{.Driver}} {{.IPAM.Driver}}", "weave")
		if err == nil && out != "weavemesh weavemesh" {
			return fmt.Errorf("network weave has drivers %q", out)
		}
		return err
	})
}

// dockerCtr is a container started with docker run.
type dockerCtr struct{ name, id, ip, mac string }

// run starts a busybox container on network and reads its address.
func (d *dockerHost) run(name, network string) dockerCtr {
	d.t.Helper()
	c := dockerCtr{name: d.tag + "-" + name}
	c.id = mustDocker(d.t, "run", "-d", "--label", d.label, "--name", c.name, "--network", network, d.image, "sleep", "3600")
	f := fmt.Sprintf(`{{(index .NetworkSettings.Networks %q).IPAddress}} {{(index .NetworkSettings.Networks %q).MacAddress}}`, network, network)
	out := strings.Fields(mustDocker(d.t, "inspect", "-f", f, c.name))
	if len(out) != 2 {
		d.t.Fatalf("docker inspect %s: %q", c.name, out)
	}
	c.ip, c.mac = out[0], out[1]
	return c
}

func (d *dockerHost) pingFrom(c dockerCtr, ip string) {
	d.t.Helper()
	netnstest.WaitFor(d.t, dockerWait, c.name+" pings "+ip, func() error {
		_, err := docker(d.t, "exec", c.name, "ping", "-c", "1", "-W", "2", ip)
		return err
	})
}

func containerIP(t *testing.T, ns string) string {
	t.Helper()
	out, err := netnstest.Output(ns, "ip", "-4", "-o", "addr", "show", "dev", "ethwe")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(out) {
		if p, err := netip.ParsePrefix(f); err == nil {
			return p.Addr().String()
		}
	}
	t.Fatalf("no IPv4 address on ethwe in %s: %q", ns, out)
	return ""
}

func expectIn(out string, err error, want ...string) error {
	if err != nil {
		return err
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			return fmt.Errorf("%q not in %q", w, out)
		}
	}
	return nil
}

// checkPS: weave ps lists the Docker container with its MAC and address.
func (d *dockerHost) checkPS(c dockerCtr) {
	d.t.Helper()
	out, err := d.weave("ps")
	want := c.id[:12] + " " + c.mac + " " + c.ip + "/12"
	if err != nil || !strings.Contains(out, want) {
		d.t.Fatalf("weave ps: %v\n%s\nwant a line %q", err, out, want)
	}
}

// checkRelease: docker rm gives the address back to IPAM (GET /ip).
func (d *dockerHost) checkRelease(c dockerCtr) {
	d.t.Helper()
	if !d.owns(c.ip) {
		d.t.Fatalf("%s's address %s not in GET /ip before docker rm", c.name, c.ip)
	}
	mustDocker(d.t, "rm", "-f", c.name)
	netnstest.WaitFor(d.t, dockerWait, c.ip+" released after docker rm", func() error {
		if d.owns(c.ip) {
			return fmt.Errorf("GET /ip still lists %s", c.ip)
		}
		return nil
	})
}

func (d *dockerHost) owns(ip string) bool {
	out, err := d.get("/ip")
	return err == nil && strings.Contains(out, `"`+ip+"/")
}

// checkUserNetworks: --subnet inside the IPAM range works (and routes to
// the default network through the host); outside it is refused, naming both.
func (d *dockerHost) checkUserNetworks(c1 dockerCtr) {
	d.t.Helper()
	userNet := d.tag + "-net"
	mustDocker(d.t, "network", "create", "-d", "weavemesh", "--ipam-driver", "weavemesh", "--subnet", "10.40.7.0/24", "--label", d.label, userNet)
	c4 := d.run("c4", userNet)
	if !netip.MustParsePrefix("10.40.7.0/24").Contains(netip.MustParseAddr(c4.ip)) {
		d.t.Fatalf("container on %s got %s, not in 10.40.7.0/24", userNet, c4.ip)
	}
	d.pingFrom(c4, c1.ip)
	out, err := docker(d.t, "network", "create", "-d", "weavemesh", "--ipam-driver", "weavemesh", "--subnet", "10.99.0.0/16", "--label", d.label, d.tag+"-bad")
	if err == nil || !strings.Contains(out, "10.99.0.0/16") || !strings.Contains(out, "10.32.0.0/12") {
		d.t.Fatalf("network outside the range: err %v, output %q; want a refusal naming 10.99.0.0/16 and 10.32.0.0/12", err, out)
	}
	mustDocker(d.t, "rm", "-f", c4.name)
	mustDocker(d.t, "network", "rm", userNet)
}

// checkRestart: SIGKILL the router (stale sockets stay), relaunch: the
// container keeps its address and is reachable across the mesh again, and
// docker rm still releases through the new plugin.
func (d *dockerHost) checkRestart(c1 dockerCtr, c3NS string) {
	d.t.Helper()
	netID := mustDocker(d.t, "network", "inspect", "-f", "{{.Id}}", "weave")
	d.killRouter()
	if _, err := os.Stat("/run/docker/plugins/weavemesh.sock"); err != nil {
		d.t.Fatalf("no stale socket after SIGKILL: %v", err)
	}
	if out, err := d.weave("launch", "--nickname", "root-"+d.tag, d.tp.Host(1).IP); err != nil {
		d.t.Fatalf("relaunch: %v %s", err, out)
	}
	if !d.owns(c1.ip) {
		d.t.Fatalf("%s lost its address %s across the restart", c1.name, c1.ip)
	}
	if id := mustDocker(d.t, "network", "inspect", "-f", "{{.Id}}", "weave"); id != netID {
		d.t.Fatalf("network weave was recreated (%s, was %s)", id, netID)
	}
	netnstest.WaitFor(d.t, dockerWait, "c3 (h1) pings c1 after the restart", func() error {
		_, err := netnstest.Ping(c3NS, c1.ip, 1)
		return err
	})
	mustDocker(d.t, "rm", "-f", c1.name)
	netnstest.WaitFor(d.t, dockerWait, c1.ip+" released through the restarted plugin", func() error {
		if d.owns(c1.ip) {
			return fmt.Errorf("GET /ip still lists %s", c1.ip)
		}
		return nil
	})
}

func (d *dockerHost) killRouter() {
	d.t.Helper()
	data, err := os.ReadFile(filepath.Join(d.root.RunDir, "weaver.pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		d.t.Fatalf("root router pid file: %v %q", err, data)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	netnstest.WaitFor(d.t, dockerWait, "root router gone", func() error {
		if syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("pid %d alive", pid)
		}
		return nil
	})
}

// checkReset: weave reset removes the Docker network weave.
func (d *dockerHost) checkReset() {
	d.t.Helper()
	if out, err := d.weave("reset"); err != nil {
		d.t.Fatalf("%v %s", err, out)
	}
	if _, err := docker(d.t, "network", "inspect", "weave"); err == nil {
		d.t.Fatal("Docker network weave still exists after weave reset")
	}
}

// checkAttach: weave attach/detach with a Docker container name, on a
// container of Docker's own bridge network.
func (d *dockerHost) checkAttach(c1 dockerCtr) {
	d.t.Helper()
	c5 := d.run("c5", "bridge")
	out, err := d.weave("attach", c5.name)
	if err != nil {
		d.t.Fatal(err)
	}
	ip := strings.TrimSpace(out)
	if !d.owns(ip) {
		d.t.Fatalf("weave attach %s printed %q, not an address in GET /ip", c5.name, out)
	}
	d.pingFrom(c5, c1.ip)
	if out, err := d.weave("detach", c5.name); err != nil || strings.TrimSpace(out) != ip {
		d.t.Fatalf("weave detach %s: %v %q; want %s", c5.name, err, out, ip)
	}
	if d.owns(ip) {
		d.t.Fatalf("weave detach left %s allocated", ip)
	}
	mustDocker(d.t, "rm", "-f", c5.name)
}

// checkRoutes: on its only network the container's default route is ethwe0
// (via the host's bridge address) and Docker added no docker_gwbridge; a
// container of Docker's bridge network that joins weave keeps eth0's.
func (d *dockerHost) checkRoutes(c1 dockerCtr) {
	d.t.Helper()
	gw := mustDocker(d.t, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}}{{end}}", "weave")
	routes := mustDocker(d.t, "exec", c1.name, "ip", "route")
	links := mustDocker(d.t, "exec", c1.name, "ip", "-o", "link")
	if !strings.Contains(routes, "default via "+gw+" dev ethwe0") || strings.Contains(links, "eth0") {
		d.t.Fatalf("%s: routes\n%s\nlinks\n%s\nwant the default route via %s on ethwe0 and no docker_gwbridge eth0", c1.name, routes, links, gw)
	}
	c6 := d.run("c6", "bridge")
	mustDocker(d.t, "network", "connect", "weave", c6.name)
	routes = mustDocker(d.t, "exec", c6.name, "ip", "route")
	if !strings.Contains(routes, "dev ethwe0") || !strings.Contains(routes, "default via") || strings.Contains(routes, "default via "+gw) {
		d.t.Fatalf("%s (bridge, then weave): routes\n%s\nwant ethwe0's subnet and the default route left on eth0", c6.name, routes)
	}
	d.pingFrom(c6, c1.ip)
	mustDocker(d.t, "rm", "-f", c6.name)
}
