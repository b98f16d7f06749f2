package cni_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/seedf75a49c6/weave/internal/netns"
	"github.com/seedf75a49c6/weave/internal/netnstest"
	"github.com/seedf75a49c6/weave/plugin/cni"
)

// ipRange is the IPAM range of test routers.
const ipRange = "10.40.0.0/16"

// host is one namespace host running our router, and a libcni client
// that runs plugins in it.
type host struct {
	t       *testing.T
	tp      *netnstest.Topology
	h       *netnstest.Host
	dataDir string
	cache   string
	n       int
	// httpAddr is the router's API inside the host.
	httpAddr string
}

func newHost(t *testing.T) *host { t.Helper(); return newHostRange(t, ipRange) }

// newHostRange launches the router with --ipalloc-range rng ("" = no IPAM).
func newHostRange(t *testing.T, rng string) *host { t.Helper(); return newHostAt(t, rng, "") }

// newHostAt also sets the router's API address ("" = the default).
func newHostAt(t *testing.T, rng, httpAddr string) *host {
	t.Helper()
	return newHostWith(t, httpAddr, "--no-fastdp", "--ipalloc-range", rng)
}

// newHostWith launches the router with the given `weave launch` arguments.
func newHostWith(t *testing.T, httpAddr string, launch ...string) *host {
	t.Helper()
	netnstest.RequireRoot(t)
	netnstest.RequireTools(t, "ip", "iptables", "nsenter")
	if build.err != nil {
		t.Fatalf("TestMain could not build the product: %v", build.err)
	}
	tp := netnstest.New(t, netnstest.Config{Hosts: 1, Weave: build.weave, HTTPAddr: httpAddr})
	x := &host{t: t, tp: tp, h: tp.Host(1), dataDir: t.TempDir(), cache: t.TempDir(), httpAddr: httpAddr}
	if x.httpAddr == "" {
		x.httpAddr = "127.0.0.1:6784"
	}
	if _, err := tp.StartRouter(x.h, launch...); err != nil {
		t.Fatal(err)
	}
	return x
}

func (x *host) nsPath() string { return netnstest.NSPath(x.h.NS) }

// client returns a libcni client running plugins on this host with env.
func (x *host) client(env ...string) *libcni.CNIConfig {
	return x.clientCache(x.cache, env...)
}

func (x *host) clientCache(cache string, env ...string) *libcni.CNIConfig {
	return libcni.NewCNIConfigWithCacheDir([]string{build.bin, "/usr/lib/cni"}, cache, &nsExec{netns: x.nsPath(), env: env})
}

// conflist is network "weave" at version with one weave-net plugin whose
// config gets the extra JSON members.
func (x *host) conflist(version, extra string) *libcni.NetworkConfigList {
	x.t.Helper()
	if extra != "" {
		extra = ", " + extra
	}
	s := fmt.Sprintf(`{"cniVersion":%q,"name":"weave","plugins":[{"type":"weave-net","dataDir":%q%s}]}`, version, x.dataDir, extra)
	l, err := libcni.ConfListFromBytes([]byte(s))
	if err != nil {
		x.t.Fatalf("parse conflist %s: %v", s, err)
	}
	return l
}

// container is a fresh namespace and the runtime config naming it.
func (x *host) container() (*netnstest.Container, *libcni.RuntimeConf) {
	x.n++
	name := fmt.Sprintf("c%d", x.n)
	c := x.tp.NewContainer(x.h, name, "")
	id := fmt.Sprintf("%s-%d-%s", x.tp.Prefix, os.Getpid(), name)
	return c, &libcni.RuntimeConf{ContainerID: id, NetNS: netnstest.NSPath(c.NS), IfName: "eth0"}
}

func (x *host) add(l *libcni.NetworkConfigList, rt *libcni.RuntimeConf) *current.Result {
	x.t.Helper()
	res, err := x.client().AddNetworkList(context.Background(), l, rt)
	if err != nil {
		x.t.Fatalf("ADD %s (cniVersion %s): %v", rt.ContainerID, l.CNIVersion, err)
	}
	if res.Version() != l.CNIVersion {
		x.t.Fatalf("ADD at %s returned a %s result", l.CNIVersion, res.Version())
	}
	return x.convert(res)
}

func (x *host) convert(res types.Result) *current.Result {
	x.t.Helper()
	cur, err := current.NewResultFromResult(res)
	if err != nil {
		x.t.Fatalf("convert result: %v", err)
	}
	return cur
}

func (x *host) del(l *libcni.NetworkConfigList, rt *libcni.RuntimeConf) {
	x.t.Helper()
	if err := x.client().DelNetworkList(context.Background(), l, rt); err != nil {
		x.t.Fatalf("DEL %s (cniVersion %s): %v", rt.ContainerID, l.CNIVersion, err)
	}
}

// routerGET performs GET path on the router's API inside the host.
func (x *host) routerGET(path string) (int, string) {
	x.t.Helper()
	var conn net.Conn
	err := netns.Do(x.nsPath(), func() error {
		var err error
		conn, err = net.DialTimeout("tcp", x.httpAddr, 3*time.Second)
		return err
	})
	if err != nil {
		x.t.Fatalf("connect to the router API: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: weave\r\n\r\n", path)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		x.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(body))
}

// heldBy returns the addresses IPAM holds for id ("" when none).
func (x *host) heldBy(id string) string {
	x.t.Helper()
	code, body := x.routerGET("/ip/" + id)
	if code == 404 {
		return ""
	}
	if code != 200 {
		x.t.Fatalf("GET /ip/%s: %d %s", id, code, body)
	}
	return body
}

// hostLinkExists reports whether link name exists in the host namespace.
func (x *host) hostLinkExists(name string) bool {
	_, err := netnstest.Output(x.h.NS, "ip", "link", "show", "dev", name)
	return err == nil
}

// inside runs a command in container c and returns its output.
func inside(t *testing.T, c *netnstest.Container, args ...string) string {
	t.Helper()
	out, err := netnstest.Output(c.NS, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cniError asserts err is a CNI error object with code, whose msg contains want.
func cniError(t *testing.T, err error, code uint, want string) {
	t.Helper()
	var te *types.Error
	if !errors.As(err, &te) {
		t.Fatalf("want a CNI error with code %d, got %T %v", code, err, err)
	}
	if te.Code != code || !strings.Contains(te.Msg, want) {
		t.Fatalf("want code %d with %q in msg, got code %d msg %q details %q", code, want, te.Code, te.Msg, te.Details)
	}
}

// vethCount counts the host's vethwepl* links (a leak check).
func (x *host) vethCount() int {
	x.t.Helper()
	out, err := netnstest.Output(x.h.NS, "ip", "-o", "link", "show")
	if err != nil {
		x.t.Fatal(err)
	}
	return strings.Count(out, ": vethwepl")
}

func (x *host) records() int {
	files, _ := filepath.Glob(filepath.Join(x.dataDir, "*", "*", "*.json"))
	return len(files)
}

var _ = cni.HostVethName
