package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/seedf75a49c6/weave/internal/hostsfile"
)

// proxied reports whether the container was made by the proxy to go on
// weave: its entrypoint is /w/w, its network mode one we attach, and its
// WEAVE_CIDR not none (a start may have changed its HostConfig).
func (p *Proxy) proxied(ct container.InspectResponse) bool {
	if ct.Config == nil || len(ct.Config.Entrypoint) == 0 || ct.Config.Entrypoint[0] != WaitPath {
		return false
	}
	mode := ""
	if ct.HostConfig != nil {
		mode = string(ct.HostConfig.NetworkMode)
	}
	return p.skipReason(mode, ct.Config.Env) == ""
}

// attach puts a running proxied container on weave: addresses (claimed or
// allocated under its ID), /etc/hosts, ethwe, weaveDNS names. Calling it
// again for the same container changes nothing.
func (p *Proxy) attach(ctx context.Context, id string) error {
	// The lock is the full ID's: a call may name the container by name.
	res, err := p.engine.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil // gone already (docker run --rm of a short command)
	} else if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	unlock := p.lock(res.Container.ID)
	defer unlock()
	res, err = p.engine.ContainerInspect(ctx, res.Container.ID, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	ct := res.Container
	if !p.proxied(ct) || ct.State == nil || !ct.State.Running || ct.State.Pid == 0 {
		return nil
	}
	if _, have, ok := p.cfg.Network.Addrs(ct.State.Pid); ok && len(have) > 0 {
		return nil // attached already (the start event and the start call both ask)
	}
	specs, err := parseCIDRs(weaveCIDRValue(ct.Config.Env))
	if err != nil {
		return err
	}
	addrs := make([]netip.Prefix, 0, len(specs))
	for _, s := range specs {
		if !s.allocate {
			if err := p.cfg.Network.Claim(ctx, ct.ID, s.addr); err != nil {
				return fmt.Errorf("claim %s: %w", s.addr, err)
			}
			addrs = append(addrs, s.addr)
			continue
		}
		a, err := p.cfg.Network.Allocate(ctx, ct.ID, s.addr)
		if err != nil {
			return fmt.Errorf("allocate an address: %w", err)
		}
		addrs = append(addrs, a)
	}
	fqdn := fqdnOf(ct.Config)
	if !p.cfg.NoRewriteHosts {
		if err := p.rewriteHosts(ct, fqdn, addrs); err != nil {
			return err
		}
	}
	// ethwe last: weavewait lets the command run once it is up.
	if err := p.cfg.Network.Attach(ct.ID, ct.State.Pid, addrs, p.cfg.NoMulticastRoute); errors.Is(err, os.ErrNotExist) {
		// It exited meanwhile (its die event may be handled already).
		p.releaseLocked(ct.ID)
		return nil
	} else if err != nil {
		return err
	}
	p.register(ct.ID, fqdn, addrs)
	p.log.Info("container attached", "container", shortID(ct.ID), "addrs", fmt.Sprint(addrs), "name", fqdn)
	return nil
}

func (p *Proxy) rewriteHosts(ct container.InspectResponse, fqdn string, addrs []netip.Prefix) error {
	if ct.HostsPath == "" {
		return nil
	}
	var extra []hostsfile.Host
	if ct.HostConfig != nil {
		for _, e := range ct.HostConfig.ExtraHosts {
			h, err := hostsfile.ParseHost(e)
			if err != nil {
				p.log.Info("skipping an --add-host entry", "container", shortID(ct.ID), "err", err)
				continue
			}
			extra = append(extra, h)
		}
	}
	return hostsfile.Write(ct.HostsPath, fqdn, addrs, extra)
}

// register names the container in weaveDNS when its name is in the domain.
func (p *Proxy) register(id, fqdn string, addrs []netip.Prefix) {
	if !p.dnsOn() || fqdn == "" || !inDomain(fqdn, p.cfg.DNSDomain) {
		return
	}
	for _, a := range addrs {
		if err := p.cfg.DNS.AddEntry(fqdn+".", id, a.Addr()); err != nil {
			p.log.Warn("cannot register the container's DNS name", "container", shortID(id), "name", fqdn, "err", err)
		}
	}
}

func fqdnOf(c *container.Config) string {
	h := strings.TrimSuffix(c.Hostname, ".")
	if h == "" {
		return ""
	}
	if d := strings.Trim(c.Domainname, "."); d != "" {
		h += "." + d
	}
	return h
}

func inDomain(fqdn, domain string) bool {
	d := "." + strings.Trim(strings.ToLower(domain), ".")
	f := strings.ToLower(strings.TrimSuffix(fqdn, "."))
	return strings.HasSuffix(f, d) && len(f) > len(d)
}

// release gives a stopped container's addresses back and tombstones its
// names; a container running again (restarted) keeps them.
func (p *Proxy) release(ctx context.Context, id string, destroyed bool) {
	unlock := p.lock(id)
	defer unlock()
	if !destroyed {
		res, err := p.engine.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		switch {
		case cerrdefs.IsNotFound(err):
		case err != nil:
			p.log.Debug("inspect a stopped container", "container", shortID(id), "err", err)
			return
		case !p.proxied(res.Container) || res.Container.State != nil && res.Container.State.Running:
			return
		}
	}
	p.releaseLocked(id)
}

// releaseLocked frees id's addresses and names; the caller holds its lock.
func (p *Proxy) releaseLocked(id string) {
	if err := p.cfg.Network.Release(id); err != nil {
		p.log.Warn("cannot release the addresses of a stopped container", "container", shortID(id), "err", err)
	}
	if p.cfg.DNS != nil {
		if err := p.cfg.DNS.ContainerDied(id); err != nil {
			p.log.Debug("tombstone DNS names of a stopped container", "container", shortID(id), "err", err)
		}
	}
	p.cfg.Network.Detached(id)
}

// rewriteInspect puts ethwe's first address and MAC into NetworkSettings
// of docker inspect (--rewrite-inspect), where Docker shows its own.
func (p *Proxy) rewriteInspect(resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var ct container.InspectResponse
	if json.Unmarshal(body, &ct) != nil || !p.proxied(ct) || ct.State == nil || ct.State.Pid == 0 {
		return nil
	}
	mac, addrs, ok := p.cfg.Network.Addrs(ct.State.Pid)
	if !ok || len(addrs) == 0 {
		return nil
	}
	addr := addrs[0]
	var raw, ns map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil || json.Unmarshal(raw["NetworkSettings"], &ns) != nil || ns == nil {
		return nil
	}
	set := func(k string, v any) { data, _ := json.Marshal(v); ns[k] = data }
	set("IPAddress", addr.Addr().String())
	set("IPPrefixLen", addr.Bits())
	set("MacAddress", mac.String())
	data, _ := json.Marshal(ns)
	raw["NetworkSettings"] = data
	if body, err = json.Marshal(raw); err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// ErrNoIPAM is what a Network without IPAM answers to Allocate.
var ErrNoIPAM = errors.New("no IPAM (--ipalloc-range \"\"): give the container an address with WEAVE_CIDR=a.b.c.d/n")
