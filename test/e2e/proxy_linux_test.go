package e2e

import (
	"context"
	"fmt"
	"net/netip"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/internal/testutil"
)

// TestDockerProxy runs Weave 2.8.1's proxy scenarios (its tests 605-690)
// against the machine's dockerd through `eval $(weave env)`: the root
// router (plugin and proxy on, as `weave launch` turns them on) is one
// host, h1 a namespace host. Containers made by a plain `docker run`
// through the proxy get ethwe before their command starts, ping h1's
// container and are found by name; WEAVE_CIDR forms and network modes
// attach or stay off; entrypoints and exit codes are Docker's; restarts
// of the container and of the router re-attach; 50 short-lived
// containers in a /28 do not exhaust it; big chunked and hijacked streams
// pass; unix and TCP listeners, --rewrite-inspect, status and report.
func TestDockerProxy(t *testing.T) {
	d, h1 := startDockerHosts(t)
	px := d.proxyEnv()
	c3 := d.tp.AddContainer(h1, "c3", "net:default")
	c3IP := containerIP(t, c3.NS)

	p1 := px.run("p1")
	px.checkWaitForEthwe()
	netnstest.WaitFor(t, dockerWait, "c3 (h1) pings proxied p1", func() error {
		_, err := netnstest.Ping(c3.NS, p1.ip, 1)
		return err
	})
	d.pingFrom(p1, c3IP)
	px.checkDNS(p1, h1)
	px.checkHosts(p1)
	px.checkCIDRForms()
	px.checkNetworkModes(p1)
	px.checkEntrypoints()
	px.checkStreams()
	px.checkStatus(p1)
	px.checkRestart(p1)
	px.checkShortLived()
	px.checkRouterRestart(p1, h1, c3.NS)
	px.checkNoDefaultIPAM(h1)
}

// proxyHost drives docker through the proxy.
type proxyHost struct {
	*dockerHost
	host string // DOCKER_HOST from weave env
}

// proxyEnv checks `weave env`, `weave config` and `weave env --restore`.
func (d *dockerHost) proxyEnv() *proxyHost {
	d.t.Helper()
	out, err := d.weave("env")
	sock := "unix://" + filepath.Join(d.root.RunDir, "weave.sock")
	if err != nil || strings.TrimSpace(out) != "export DOCKER_HOST="+sock+" ORIG_DOCKER_HOST=" {
		d.t.Fatalf("weave env: %v %q; want export DOCKER_HOST=%s ORIG_DOCKER_HOST=", err, out, sock)
	}
	if out, err := d.weave("config"); err != nil || strings.TrimSpace(out) != "-H="+sock {
		d.t.Fatalf("weave config: %v %q", err, out)
	}
	return &proxyHost{dockerHost: d, host: sock}
}

// docker runs the docker CLI with DOCKER_HOST at the proxy.
func (p *proxyHost) docker(args ...string) (string, error) {
	return dockerAt(p.host, args...)
}

func dockerAt(host string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, "docker", args...)
	cmd.Env = append(cmd.Environ(), "DOCKER_HOST="+host)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("DOCKER_HOST=%s docker %s: %w: %s", host, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func (p *proxyHost) must(args ...string) string {
	p.t.Helper()
	out, err := p.docker(args...)
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

// run starts a detached container through the proxy and reads ethwe.
func (p *proxyHost) run(name string, opts ...string) dockerCtr {
	p.t.Helper()
	c := dockerCtr{name: p.tag + "-" + name}
	args := append([]string{"run", "-d", "--label", p.label, "--name", c.name}, opts...)
	c.id = p.must(append(args, p.image, "sleep", "3600")...)
	c.ip, c.mac = p.ethwe(c.name)
	return c
}

// ethwe is the container's first ethwe address and MAC, right after
// docker run returned: the proxy attaches before it answers the start.
func (p *proxyHost) ethwe(name string) (ip, mac string) {
	p.t.Helper()
	out := mustDocker(p.t, "exec", name, "ip", "-4", "-o", "addr", "show", "dev", "ethwe")
	for _, f := range strings.Fields(out) {
		if a, err := netip.ParsePrefix(f); err == nil {
			ip = a.Addr().String()
			break
		}
	}
	link := strings.Fields(mustDocker(p.t, "exec", name, "cat", "/sys/class/net/ethwe/address"))
	if ip == "" || len(link) != 1 {
		p.t.Fatalf("%s: no ethwe address: %q", name, out)
	}
	return ip, link[0]
}

// checkWaitForEthwe (610): the command sees ethwe up with its address,
// the user's exit code comes back, /w is read-only, one /w/w.
func (p *proxyHost) checkWaitForEthwe() {
	p.t.Helper()
	out := p.must("run", "--rm", "--label", p.label, p.image, "sh", "-c", "cat /sys/class/net/ethwe/operstate; ip -4 -o addr show dev ethwe")
	if !strings.Contains(out, "inet 10.") {
		p.t.Fatalf("the command did not see ethwe with an address when it started: %q", out)
	}
	// a non-root user runs /w/w too, and its /etc/hosts is rewritten (615)
	out = p.must("run", "--rm", "--label", p.label, "--name", p.tag+"-nobody", "-u", "65534:65534", p.image,
		"sh", "-c", "ip -4 -o addr show dev ethwe; cat /etc/hosts")
	if !strings.Contains(out, "inet 10.") || !strings.Contains(out, "\t"+p.tag+"-nobody.weave.local "+p.tag+"-nobody\n") {
		p.t.Fatalf("non-root container through the proxy:\n%s\nwant ethwe with an address and its name in /etc/hosts", out)
	}
	_, err := p.docker("run", "--rm", "--label", p.label, p.image, "sh", "-c", "exit 3")
	if ee, ok := cause(err).(*osexec.ExitError); !ok || ee.ExitCode() != 3 {
		p.t.Fatalf("exit 3 through the proxy: %v; want exit code 3", err)
	}
	if out, err := p.docker("run", "--rm", "--label", p.label, p.image, "sh", "-c", "echo x > /w/w"); err == nil {
		p.t.Fatalf("/w/w is writable in the container: %q", out)
	}
	name := p.tag + "-twice"
	p.must("create", "--label", p.label, "--name", name, "--entrypoint", "/w/w", p.image, "echo", "hi")
	if ep := p.must("inspect", "-f", "{{json .Config.Entrypoint}}", name); ep != `["/w/w"]` {
		p.t.Fatalf("entrypoint of a container created with /w/w: %s, want one /w/w", ep)
	}
	p.must("rm", name)
}

// cause unwraps to the *exec.ExitError of a failed docker run.
func cause(err error) error {
	for err != nil {
		if ee, ok := err.(*osexec.ExitError); ok {
			return ee
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
	return nil
}

// checkDNS (630): the name derived from the container name is in
// weaveDNS here and on h1, and resolves inside another container.
func (p *proxyHost) checkDNS(p1 dockerCtr, h1 *netnstest.Host) {
	p.t.Helper()
	fqdn := p1.name + ".weave.local"
	netnstest.WaitFor(p.t, dockerWait, "h1's weaveDNS knows "+fqdn, func() error {
		out, err := p.tp.Weave(h1, "dns-lookup", fqdn)
		return expectIn(out, err, p1.ip)
	})
	p2 := p.run("p2")
	out := p.must("exec", p2.name, "nslookup", p1.name)
	if !strings.Contains(out, p1.ip) {
		p.t.Fatalf("nslookup %s in %s (search weave.local, weaveDNS): %q; want %s", p1.name, p2.name, out, p1.ip)
	}
	p.must("rm", "-f", p2.name)
}

// checkHosts (615): /etc/hosts names the container on its weave address.
func (p *proxyHost) checkHosts(p1 dockerCtr) {
	p.t.Helper()
	hosts := mustDocker(p.t, "exec", p1.name, "cat", "/etc/hosts")
	want := p1.ip + "\t" + p1.name + ".weave.local " + p1.name
	if !strings.Contains(hosts, want) {
		p.t.Fatalf("/etc/hosts of %s:\n%s\nwant the line %q", p1.name, hosts, want)
	}
}

// checkCIDRForms (660): static, ip:, net:, several, none.
func (p *proxyHost) checkCIDRForms() {
	p.t.Helper()
	for _, tc := range []struct{ cidr, want string }{
		{"10.2.5.7/24", "10.2.5.7/24"},
		{"ip:10.2.5.8/24", "10.2.5.8/24"},
		{"net:10.40.9.0/24", "10.40.9."},
		{"10.2.5.9/24 net:default", "10.2.5.9/24 10."},
		{"none", ""},
	} {
		out, err := p.docker("run", "--rm", "--label", p.label, "-e", "WEAVE_CIDR="+tc.cidr, p.image,
			"sh", "-c", "ip -4 -o addr show dev ethwe 2>&1 | while read n i f a r; do echo -n \"$a \"; done")
		if err != nil {
			p.t.Fatal(err)
		}
		got := strings.TrimSpace(out)
		if tc.want == "" && strings.Contains(got, "10.") || !strings.HasPrefix(got, strings.Fields(tc.want + " x")[0]) && tc.want != "" {
			p.t.Fatalf("WEAVE_CIDR=%q: ethwe addresses %q, want %q", tc.cidr, got, tc.want)
		}
		for _, w := range strings.Fields(tc.want) {
			if !strings.Contains(got, w) {
				p.t.Fatalf("WEAVE_CIDR=%q: ethwe addresses %q, want %q", tc.cidr, got, tc.want)
			}
		}
	}
}

// checkNetworkModes (660): host, none and container: stay off weave.
func (p *proxyHost) checkNetworkModes(p1 dockerCtr) {
	p.t.Helper()
	for i, mode := range []string{"host", "none", "container:" + p1.name} {
		name := fmt.Sprintf("%s-mode%d", p.tag, i)
		p.must("create", "--label", p.label, "--name", name, "--net", mode, p.image, "true")
		if ep := p.must("inspect", "-f", "{{json .Config.Entrypoint}}", name); ep != "null" && ep != "[]" {
			p.t.Fatalf("--net=%s: entrypoint %s; the proxy must leave it alone", mode, ep)
		}
		p.must("rm", name)
	}
}

// checkEntrypoints (620): image CMD, given command, --entrypoint with and
// without arguments run as Docker runs them, after ethwe is up.
func (p *proxyHost) checkEntrypoints() {
	p.t.Helper()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"echo", "cmd-only"}, "cmd-only"},
		{[]string{"--entrypoint", "echo", p.image, "ep", "and", "cmd"}, "ep and cmd"},
		{[]string{"--entrypoint", "/bin/echo", p.image}, ""},
	} {
		args := append([]string{"run", "--rm", "--label", p.label}, tc.args...)
		if tc.args[0] != "--entrypoint" {
			args = append([]string{"run", "--rm", "--label", p.label, p.image}, tc.args...)
		}
		if out := p.must(args...); out != tc.want {
			p.t.Fatalf("docker %s: %q, want %q", strings.Join(args, " "), out, tc.want)
		}
	}
	// Older API versions (the CLI speaks them as asked) go through too.
	for _, v := range []string{"1.24", "1.30"} {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		cmd := osexec.CommandContext(ctx, "docker", "run", "--rm", "--label", p.label, p.image, "sh", "-c", "ip -4 -o addr show dev ethwe")
		cmd.Env = append(cmd.Environ(), "DOCKER_HOST="+p.host, "DOCKER_API_VERSION="+v)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), "inet 10.") {
			p.t.Fatalf("docker run with API %s through the proxy: %v %q; want ethwe with an address", v, err, out)
		}
	}
}

// checkStreams (655): a 400 kB foreground output (hijacked attach, its
// write side closed first by docker run), the same as chunked logs, and
// 120 kB of stdin through docker run -i back out of cat.
func (p *proxyHost) checkStreams() {
	p.t.Helper()
	name := p.tag + "-big"
	script := "seq 1 60000"
	out := p.must("run", "--label", p.label, "--name", name, p.image, "sh", "-c", script)
	if n := strings.Count(out, "\n") + 1; n != 60000 || !strings.HasSuffix(out, "60000") {
		p.t.Fatalf("docker run output through the proxy: %d lines (want 60000), ends %q", n, out[max(0, len(out)-20):])
	}
	logs := p.must("logs", name)
	direct := mustDocker(p.t, "logs", name)
	if logs != direct || len(logs) < 64<<10 {
		p.t.Fatalf("docker logs through the proxy: %d bytes, directly %d bytes", len(logs), len(direct))
	}
	p.must("rm", name)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, "docker", "run", "-i", "--rm", "--label", p.label, p.image, "cat")
	cmd.Env = append(cmd.Environ(), "DOCKER_HOST="+p.host)
	cmd.Stdin = strings.NewReader(strings.Repeat("stdin through the proxy\n", 5000))
	got, err := cmd.Output()
	if err != nil || string(got) != strings.Repeat("stdin through the proxy\n", 5000) {
		p.t.Fatalf("docker run -i ... cat through the proxy: %v, %d bytes back of %d", err, len(got), 5000*24)
	}
}

// checkStatus: weave status and report show the proxy's address; weave ps
// lists the container.
func (p *proxyHost) checkStatus(p1 dockerCtr) {
	p.t.Helper()
	out, err := p.weave("status")
	if err := expectIn(out, err, "        Service: proxy\n        Address: "+p.host+"\n"); err != nil {
		p.t.Fatal(err)
	}
	out, err = p.weave("report", "-f", "{{.Proxy.Addresses}}")
	if err := expectIn(out, err, "["+p.host+"]"); err != nil {
		p.t.Fatal(err)
	}
	out, err = p.weave("ps")
	if err := expectIn(out, err, p1.id[:12]+" "+p1.mac+" "+p1.ip+"/12"); err != nil {
		p.t.Fatal(err)
	}
}

// checkRestart (640): docker restart re-attaches, with the name.
func (p *proxyHost) checkRestart(p1 dockerCtr) {
	p.t.Helper()
	p.must("restart", "-t", "0", p1.name)
	ip, _ := p.ethwe(p1.name)
	if !p.owns(ip) {
		p.t.Fatalf("%s restarted with %s, which IPAM does not list", p1.name, ip)
	}
	out, err := p.weave("dns-lookup", p1.name+".weave.local")
	if err := expectIn(out, err, ip); err != nil {
		p.t.Fatal(err)
	}
}

// checkShortLived (640): 50 containers in turn in a /28 (14 addresses):
// each one's address is released when it dies.
func (p *proxyHost) checkShortLived() {
	p.t.Helper()
	start := time.Now()
	for i := range 50 {
		if _, err := p.docker("run", "--rm", "--label", p.label, "-e", "WEAVE_CIDR=net:10.40.100.0/28", p.image, "true"); err != nil {
			p.t.Fatalf("short-lived container %d in a /28: %v", i, err)
		}
	}
	through := time.Since(start) / 50
	start = time.Now()
	for range 10 { // the same without the proxy, for the log's comparison
		mustDocker(p.t, "run", "--rm", "--label", p.label, p.image, "true")
	}
	p.t.Logf("docker run --rm true: %v each through the proxy (50 in a /28), %v each directly",
		through.Round(time.Millisecond), (time.Since(start) / 10).Round(time.Millisecond))
}

// checkNoDefaultIPAM (660, 630): relaunched with --no-default-ipalloc and
// --without-dns, a container without WEAVE_CIDR stays off weave, one with
// WEAVE_CIDR=net:default goes on without a weaveDNS name or resolver.
func (p *proxyHost) checkNoDefaultIPAM(h1 *netnstest.Host) {
	p.t.Helper()
	if out, err := p.weave("stop"); err != nil {
		p.t.Fatalf("stop: %v %s", err, out)
	}
	if out, err := p.weave("launch", "--nickname", "root-"+p.tag, "--no-default-ipalloc", "--without-dns", h1.IP); err != nil {
		p.t.Fatalf("relaunch: %v %s", err, out)
	}
	off := p.tag + "-off"
	p.must("create", "--label", p.label, "--name", off, p.image, "true")
	if ep := p.must("inspect", "-f", "{{json .Config.Entrypoint}}", off); ep != "null" && ep != "[]" {
		p.t.Fatalf("no WEAVE_CIDR under --no-default-ipalloc: entrypoint %s, want the container left alone", ep)
	}
	p.must("rm", off)
	on := p.run("on", "-e", "WEAVE_CIDR=net:default")
	if out, err := p.weave("dns-lookup", on.name+".weave.local"); err == nil && strings.TrimSpace(out) != "" {
		p.t.Fatalf("--without-dns: %s has a weaveDNS name: %q", on.name, out)
	}
	if resolv := mustDocker(p.t, "exec", on.name, "cat", "/etc/resolv.conf"); strings.Contains(resolv, "weave.local") {
		p.t.Fatalf("--without-dns: resolv.conf of %s names weave.local:\n%s", on.name, resolv)
	}
	mustDocker(p.t, "rm", "-f", on.name)
}

// checkRouterRestart (640, 690, 605): a container restarted while the
// router is down waits in /w/w and is attached when the router comes back;
// the relaunched router listens on a unix socket and TCP (-H twice) and
// shows the weave address in docker inspect (--rewrite-inspect).
func (p *proxyHost) checkRouterRestart(p1 dockerCtr, h1 *netnstest.Host, c3NS string) {
	p.t.Helper()
	p.killRouter()
	mustDocker(p.t, "restart", "-t", "0", p1.name)
	if out, err := docker(p.t, "exec", p1.name, "ip", "-o", "link", "show", "ethwe"); err == nil {
		p.t.Fatalf("%s has ethwe with no router running: %q", p1.name, out)
	}
	tcp := freeLoopbackAddr(p.t)
	certs := p.t.TempDir() // docker's DOCKER_CERT_PATH layout, and the proxy's server pair
	testutil.NewCA(p.t).WriteFiles(certs, map[string]string{"": "client", "server-": "127.0.0.1"})
	if out, err := p.weave("launch", "--nickname", "root-"+p.tag, "--rewrite-inspect", "-H", p.host, "-H", "tcp://"+tcp,
		"--tlsverify", "--tlscacert", certs+"/ca.pem", "--tlscert", certs+"/server-cert.pem", "--tlskey", certs+"/server-key.pem",
		"--hostname-match", "^"+p.tag+"-(.*)$", "--hostname-replacement", "x-$1", h1.IP); err != nil {
		p.t.Fatalf("relaunch: %v %s", err, out)
	}
	var ip string
	netnstest.WaitFor(p.t, dockerWait, p1.name+" re-attached by the relaunched router", func() error {
		out, err := docker(p.t, "exec", p1.name, "ip", "-4", "-o", "addr", "show", "dev", "ethwe")
		if err != nil {
			return err
		}
		if f := strings.Fields(out); len(f) > 3 {
			ip = strings.Split(f[3], "/")[0]
			return nil
		}
		return fmt.Errorf("ethwe: %q", out)
	})
	netnstest.WaitFor(p.t, dockerWait, "c3 (h1) pings re-attached p1", func() error {
		_, err := netnstest.Ping(c3NS, ip, 1)
		return err
	})
	if got, err := p.get("/proxyaddrs"); err != nil || got != p.host+" tcp://"+tcp {
		p.t.Fatalf("GET /proxyaddrs: %v %q, want %q", err, got, p.host+" tcp://"+tcp)
	}
	inspect := []string{"inspect", "-f", "{{.NetworkSettings.IPAddress}}", p1.name}
	for _, host := range []string{p.host, "tcp://" + tcp} {
		args := inspect
		if strings.HasPrefix(host, "tcp:") { // 670: docker's own TLS client against --tlsverify
			args = append([]string{"--tlsverify", "--tlscacert", certs + "/ca.pem", "--tlscert", certs + "/cert.pem", "--tlskey", certs + "/key.pem"}, inspect...)
		}
		got, err := dockerAt(host, args...)
		if err != nil || got != ip {
			p.t.Fatalf("docker -H %s inspect (--rewrite-inspect): %v %q, want %s", host, err, got, ip)
		}
	}
	if out, err := dockerAt("tcp://"+tcp, append([]string{"--tls", "--tlscacert", certs + "/ca.pem"}, inspect...)...); err == nil {
		p.t.Fatalf("docker without a client certificate was served under --tlsverify: %q", out)
	}
	if got := mustDocker(p.t, "inspect", "-f", "{{.NetworkSettings.IPAddress}}", p1.name); got == ip {
		p.t.Fatalf("Docker's own inspect shows the weave address %s: the rewrite must be the proxy's", ip)
	}
	hm := p.run("hm") // 680: the DNS name through --hostname-match and --hostname-replacement
	out, err := p.weave("dns-lookup", "x-hm.weave.local")
	if err := expectIn(out, err, hm.ip); err != nil {
		p.t.Fatalf("%s under --hostname-match %q --hostname-replacement x-$1: %v", hm.name, "^"+p.tag+"-(.*)$", err)
	}
	mustDocker(p.t, "rm", "-f", p1.name, hm.name)
	netnstest.WaitFor(p.t, dockerWait, ip+" released after docker rm", func() error {
		if p.owns(ip) {
			return fmt.Errorf("GET /ip still lists %s", ip)
		}
		return nil
	})
}
