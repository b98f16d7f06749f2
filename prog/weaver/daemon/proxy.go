package daemon

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/seedf75a49c6/weave/internal/netdev"
	"github.com/seedf75a49c6/weave/ipam"
	"github.com/seedf75a49c6/weave/ipam/address"
	"github.com/seedf75a49c6/weave/plugin/proxy"
)

// staleVethWait bounds the wait for a restarted container's old veth.
const staleVethWait = 5 * time.Second

// ProxyConfig is the Docker API proxy's part of Config (2.8.1's flag names).
type ProxyConfig struct {
	Listen              []string // -H (repeatable); default proxy.DefaultListen
	WeaveWait           string   // --proxy-weavewait: default weavewait next to the weaver binary
	NoDefaultIPAM       bool     // --no-default-ipalloc
	NoRewriteHosts      bool     // --no-rewrite-hosts
	RewriteInspect      bool     // --rewrite-inspect
	WithoutDNS          bool     // --without-dns
	NoMulticastRoute    bool     // --no-multicast-route
	HostnameMatch       string   // --hostname-match: default (.*)
	HostnameReplacement string   // --hostname-replacement: default $1
	HostnameFromLabel   string   // --hostname-from-label
	TLS                 bool     // --tls: serve TCP listeners over TLS (--tlscert, --tlskey)
	TLSVerify           bool     // --tlsverify: TLS and require client certificates signed by --tlscacert
	TLSCACert           string   // --tlscacert
	TLSCert             string   // --tlscert
	TLSKey              string   // --tlskey
}

// ProxyEnabled reports whether the Docker API proxy is to run.
func (c *Config) ProxyEnabled() bool { return c.Proxy && !c.NoProxy }

// ProxySocket is the default unix socket: 2.8.1's
// /var/run/weave/weave.sock for the default run dir, else in the run dir.
func (c *Config) ProxySocket() string {
	if c.RunDir == DefaultRunDir {
		return "/var/run/weave/" + proxy.SocketName
	}
	return filepath.Join(c.RunDir, proxy.SocketName)
}

func (c *Config) proxyListen() []string {
	if len(c.ProxyCfg.Listen) > 0 {
		return c.ProxyCfg.Listen
	}
	return []string{proxy.DefaultListen(c.DockerAPI, c.ProxySocket())}
}

func (c *Config) validateProxy() error {
	if !c.ProxyEnabled() {
		return nil
	}
	p := c.ProxyCfg
	if c.DockerAPI == "" {
		return errors.New("--proxy: needs a Docker API (--docker-api is \"\")")
	}
	for _, l := range c.proxyListen() {
		if _, _, err := proxy.ParseAddr(l); err != nil {
			return err
		}
	}
	if (p.TLS || p.TLSVerify) && (p.TLSCert == "" || p.TLSKey == "") {
		return errors.New("--tls/--tlsverify: give --tlscert and --tlskey")
	}
	if p.TLSVerify && p.TLSCACert == "" {
		return errors.New("--tlsverify: give --tlscacert (the CA that signs client certificates)")
	}
	return nil
}

func (c *Config) proxyTLS() (*tls.Config, error) {
	p := c.ProxyCfg
	if !p.TLS && !p.TLSVerify {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(p.TLSCert, p.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("--tlscert/--tlskey: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if p.TLSVerify {
		pem, err := os.ReadFile(p.TLSCACert)
		if err != nil {
			return nil, fmt.Errorf("--tlscacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tlscacert: no PEM certificate in %s", p.TLSCACert)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// weaveWaitPath is --proxy-weavewait, else weavewait next to weaver; it
// must be a static binary, since it runs inside any image.
func (c *Config) weaveWaitPath() (string, error) {
	path := c.ProxyCfg.WeaveWait
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("--proxy-weavewait: find weaver's directory: %w", err)
		}
		path = filepath.Join(filepath.Dir(exe), "weavewait")
	}
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("--proxy-weavewait: %w (build it with make build)", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("--proxy-weavewait: %s is dynamically linked; containers need a static binary", path)
		}
	}
	return filepath.Abs(path)
}

// startProxy serves the Docker API proxy (after the HTTP API, before the
// router reports itself ready).
func (d *daemon) startProxy(ctx context.Context, b *backend) error {
	c := d.cfg
	if !c.ProxyEnabled() {
		return nil
	}
	wait, err := c.weaveWaitPath()
	if err != nil {
		return err
	}
	tlsCfg, err := c.proxyTLS()
	if err != nil {
		return err
	}
	pc := c.ProxyCfg
	cfg := proxy.Config{
		DockerAPI: c.DockerAPI, Listen: c.proxyListen(), TLS: tlsCfg, WeaveWait: wait,
		NoDefaultIPAM: pc.NoDefaultIPAM, NoRewriteHosts: pc.NoRewriteHosts, RewriteInspect: pc.RewriteInspect,
		NoMulticastRoute: pc.NoMulticastRoute, WithoutDNS: pc.WithoutDNS,
		HostnameMatch: pc.HostnameMatch, HostnameReplacement: pc.HostnameReplacement, HostnameFromLabel: pc.HostnameFromLabel,
		Network: &proxyNetwork{d: d, b: b}, Logger: d.log,
	}
	if b.dns != nil {
		cfg.DNS, cfg.DNSDomain = b.dns, b.dns.Domain()
		if host, _, err := net.SplitHostPort(c.dnsListenAddress()); err == nil {
			if a, err := netip.ParseAddr(host); err == nil && !a.IsLoopback() && !a.IsUnspecified() {
				cfg.DNSServer = a // reachable from Docker's bridge (docker0's address)
			}
		}
	}
	p, err := proxy.New(cfg)
	if err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return err
	}
	d.onStop(p.Close)
	addrs := p.Addrs()
	b.proxyAddrs.Store(&addrs)
	return nil
}

// proxyNetwork is proxy.Network over the allocator and netdev; each
// attachment goes into the CLI's registry ($WEAVE_RUN_DIR/attached), so
// pre-claims after a restart, the dead-container release and weave ps
// treat proxied containers as attached ones.
type proxyNetwork struct {
	d *daemon
	b *backend
}

func (n *proxyNetwork) Allocate(ctx context.Context, ident string, subnet netip.Prefix) (netip.Prefix, error) {
	if n.b.ipam == nil {
		return netip.Prefix{}, proxy.ErrNoIPAM
	}
	cidr := n.b.ipam.DefaultSubnet()
	if subnet.IsValid() {
		var err error
		if cidr, err = address.ParseCIDR(subnet.String()); err != nil {
			return netip.Prefix{}, err
		}
	}
	got, err := n.b.ipam.Allocate(ctx, ident, cidr)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.ParsePrefix(got.String())
}

func (n *proxyNetwork) Claim(ctx context.Context, ident string, addr netip.Prefix) error {
	if n.b.ipam == nil {
		return nil
	}
	cidr, err := address.ParseCIDR(addr.String())
	if err != nil {
		return err
	}
	return n.b.ipam.Claim(ctx, ident, cidr, true)
}

func (n *proxyNetwork) Release(ident string) error {
	if n.b.ipam == nil {
		return nil
	}
	if err := n.b.ipam.Delete(ident); err != nil && !errors.Is(err, ipam.ErrNoAddresses) {
		return err
	}
	return nil
}

func (n *proxyNetwork) netns(pid int) string {
	return filepath.Join("/proc", strconv.Itoa(pid), "ns", "net")
}

func (n *proxyNetwork) Attach(id string, pid int, addrs []netip.Prefix, noMcast bool) error {
	ns := n.netns(pid)
	cfg := netdev.AttachConfig{
		Bridge: n.d.cfg.Bridge, NetNS: ns, ContainerID: id, IfName: containerIf,
		Addrs: addrs, NoMulticastRoute: noMcast,
	}
	// A restarted container's old veth goes with its old namespace, which
	// the kernel tears down asynchronously: wait for the name to be free.
	deadline := time.Now().Add(staleVethWait)
	_, err := netdev.AttachContainer(cfg)
	for errors.Is(err, syscall.EEXIST) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		_, err = netdev.AttachContainer(cfg)
	}
	if err != nil {
		return err
	}
	return n.d.writeAttachRecord(attachRecord{ID: id, NetNS: ns, IfName: containerIf})
}

func (n *proxyNetwork) Addrs(pid int) (net.HardwareAddr, []netip.Prefix, bool) {
	mac, addrs, ok, err := netdev.ContainerAddrs(n.netns(pid), containerIf)
	return mac, addrs, ok && err == nil
}

func (n *proxyNetwork) Detached(id string) {
	if err := os.Remove(n.d.attachRecordPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		n.d.log.Warn("remove attachment record", "container", id, "err", err)
	}
}

// attachRecordPath is where `weave attach` files id (internal/cli's
// registry: the first 8 bytes of the id's SHA-256, in hex).
func (d *daemon) attachRecordPath(id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(d.cfg.RunDir, "attached", hex.EncodeToString(sum[:8])+".json")
}

func (d *daemon) writeAttachRecord(r attachRecord) error {
	path := d.attachRecordPath(r.ID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create attachment registry: %w", err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("record attachment of %s: %w", r.ID, err)
	}
	return os.Rename(tmp, path)
}
