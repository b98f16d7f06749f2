package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/seedf75a49c6/weave/internal/api"
	"github.com/seedf75a49c6/weave/internal/hostsfile"
)

// errNoIPAM is returned for forms that need an IP allocator.
var errNoIPAM = errors.New(`no IP allocator (router not running, or launched with --ipalloc-range ""): give an address such as 10.2.1.1/24`)

// ExposeIdent is the IPAM owner of the bridge's addresses (weave expose).
const ExposeIdent = "weave:expose"

// attachment is one registry record in $WEAVE_RUN_DIR/attached/.
type attachment struct {
	ID     string `json:"id"`
	NetNS  string `json:"netns"`
	IfName string `json:"ifname"`
}

func (c *cmd) registryDir() string { return filepath.Join(c.RunDir, "attached") }

func (c *cmd) registryPath(id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(c.registryDir(), hex.EncodeToString(sum[:8])+".json")
}

func (c *cmd) record(a attachment) error {
	if err := os.MkdirAll(c.registryDir(), 0o755); err != nil {
		return fmt.Errorf("create attachment registry %s: %w", c.registryDir(), err)
	}
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode attachment %s: %w", a.ID, err)
	}
	if err := os.WriteFile(c.registryPath(a.ID), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("record attachment %s: %w", a.ID, err)
	}
	return nil
}

// attachments lists the registry, sorted by id.
func (c *cmd) attachments() ([]attachment, error) {
	files, err := filepath.Glob(filepath.Join(c.registryDir(), "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list attachment registry: %w", err)
	}
	var out []attachment
	for _, f := range files {
		var a attachment
		data, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(data, &a)
		}
		if err != nil {
			c.Logger.Warn("skipping unreadable attachment record", "path", f, "err", err)
			continue
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// runAttach attaches a namespace to the weave bridge and prints its IPs.
func runAttach(ctx context.Context, c *cmd, args []string) error {
	a, err := parseAttach("attach", args)
	if err != nil {
		return err
	}
	t, err := c.resolveTarget(ctx, a.target)
	if err != nil {
		return err
	}
	name, err := c.attachName(ctx, a, t)
	if err != nil {
		return err
	}
	if a.rewriteHosts && t.HostsPath == "" {
		return fmt.Errorf("attach %s: --rewrite-hosts needs a Docker container (a namespace has no /etc/hosts of its own)", a.target)
	}
	addrs, err := c.attachAddrs(ctx, t.ID, a.addrs)
	if err != nil {
		return err
	}
	if a.rewriteHosts {
		if err := hostsfile.Write(t.HostsPath, orDefault(strings.TrimSuffix(name, "."), t.Hostname), addrs, a.addHosts); err != nil {
			c.releaseAll(ctx, t.ID, addrs)
			return fmt.Errorf("attach %s: %w", a.target, err)
		}
	}
	_, err = c.Kernel.AttachContainer(AttachRequest{
		Bridge: c.Bridge, NetNS: t.NetNS, ContainerID: t.vethID(), IfName: ContainerIf,
		Addrs: addrs, NoMulticastRoute: a.noMulticastRoute,
	})
	if err != nil {
		c.releaseAll(ctx, t.ID, addrs)
		return fmt.Errorf("attach %s: %w", a.target, err)
	}
	if err := c.record(attachment{ID: t.ID, NetNS: t.NetNS, IfName: ContainerIf}); err != nil {
		return err
	}
	if name != "" {
		if err := c.registerNames(ctx, t.ID, name, addrs); err != nil {
			return err
		}
	}
	fmt.Fprintln(c.Stdout, ipsOnly(addrs))
	return nil
}

// attachAddrs turns address specs into concrete addresses: explicit ones
// are claimed in IPAM when a router with IPAM runs; net: forms allocate.
func (c *cmd) attachAddrs(ctx context.Context, id string, specs []addrSpec) ([]netip.Prefix, error) {
	if len(specs) == 0 {
		specs = []addrSpec{{kind: addrNetDefault}}
	}
	var out []netip.Prefix
	for _, s := range specs {
		if s.kind == addrExplicit {
			if err := c.api.ClaimIP(ctx, id, s.prefix); err != nil && !ipamAbsent(err) {
				return nil, fmt.Errorf("claim %s for %s: %w", s.prefix, id, err)
			}
			out = append(out, s.prefix)
			continue
		}
		p, err := c.api.AllocateIP(ctx, id, s.prefix)
		if ipamAbsent(err) {
			return nil, errNoIPAM
		}
		if err != nil {
			return nil, fmt.Errorf("allocate an address for %s: %w", id, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// releaseAll gives addresses back to IPAM after a failed attach or
// expose; failures are only logged (the user sees the first error).
func (c *cmd) releaseAll(ctx context.Context, id string, addrs []netip.Prefix) {
	for _, p := range addrs {
		if err := c.api.ReleaseIP(ctx, id, p.Addr()); err != nil && !ipamAbsent(err) {
			c.Logger.Warn("could not release address in IPAM", "cidr", p, "id", id, "err", err)
		}
	}
}

// ipamAbsent: no router, a router without IPAM routes, or nothing left
// to release (IPAM does not hold the address).
func ipamAbsent(err error) bool {
	return api.IsNotRunning(err) || api.StatusCode(err) == 404 || api.IsNotHeld(err)
}

func ipsOnly(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Addr().String()
	}
	return strings.Join(s, " ")
}

func cidrs(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, " ")
}

// runDetach removes addresses (all of them when none are given, which
// deletes the interface) and releases them in IPAM.
func runDetach(ctx context.Context, c *cmd, args []string) error {
	a, err := parseAttach("detach", args)
	if err != nil {
		return err
	}
	t, err := c.resolveTarget(ctx, a.target)
	if err != nil {
		return err
	}
	addrs, err := c.detachAddrs(ctx, t, a.addrs)
	if err != nil {
		return err
	}
	if err := c.Kernel.DetachContainer(t.NetNS, ContainerIf, addrsOrNil(a.addrs, addrs)); err != nil {
		return fmt.Errorf("detach %s: %w", a.target, err)
	}
	c.forgetNames(ctx, t.ID, addrs, len(a.addrs) == 0)
	for _, p := range addrs {
		if err := c.api.ReleaseIP(ctx, t.ID, p.Addr()); err != nil && !ipamAbsent(err) {
			c.Logger.Warn("could not release address in IPAM", "cidr", p, "id", t.ID, "err", err)
		}
	}
	if _, _, ok, err := c.Kernel.ContainerAddrs(t.NetNS, ContainerIf); err == nil && !ok {
		if err := os.Remove(c.registryPath(t.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove attachment record of %s: %w", t.ID, err)
		}
	}
	fmt.Fprintln(c.Stdout, ipsOnly(addrs))
	return nil
}

// addrsOrNil passes nil (remove the interface) when the user named no address.
func addrsOrNil(specs []addrSpec, addrs []netip.Prefix) []netip.Prefix {
	if len(specs) == 0 {
		return nil
	}
	return addrs
}

// detachAddrs finds the concrete addresses to remove.
func (c *cmd) detachAddrs(ctx context.Context, t target, specs []addrSpec) ([]netip.Prefix, error) {
	_, have, ok, err := c.Kernel.ContainerAddrs(t.NetNS, ContainerIf)
	if err != nil {
		return nil, fmt.Errorf("read addresses of %s: %w", t.ID, err)
	}
	if !ok {
		return nil, fmt.Errorf("detach %s: not attached (no %s interface)", t.ID, ContainerIf)
	}
	if len(specs) == 0 {
		return have, nil
	}
	var out []netip.Prefix
	for _, s := range specs {
		if s.kind == addrExplicit {
			out = append(out, s.prefix)
			continue
		}
		for _, h := range have { // net:<cidr> / net:default: what we hold there
			if s.kind == addrNetDefault || s.prefix.Contains(h.Addr()) {
				out = append(out, h)
			}
		}
	}
	return out, nil
}

// runPS prints the bridge line and one line per live attachment.
func runPS(ctx context.Context, c *cmd, args []string) error {
	want := map[string]bool{}
	for _, a := range args {
		t, err := c.resolveTarget(ctx, a)
		if err != nil {
			return err
		}
		want[t.ID] = true
	}
	if mac, addrs, ok, err := c.Kernel.BridgeAddrs(c.Bridge); err != nil {
		return err
	} else if ok && len(want) == 0 {
		fmt.Fprintln(c.Stdout, strings.TrimRight("weave:expose "+mac.String()+" "+cidrs(addrs), " "))
	}
	list, err := c.attachments()
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, a := range list {
		if len(want) > 0 && !want[a.ID] {
			continue
		}
		if _, err := os.Stat(a.NetNS); err != nil {
			continue // namespace or process gone
		}
		mac, addrs, ok, err := c.Kernel.ContainerAddrs(a.NetNS, a.IfName)
		if err != nil || !ok {
			continue
		}
		seen[a.ID] = true
		fmt.Fprintln(c.Stdout, strings.TrimRight(short(a.ID)+" "+mac.String()+" "+cidrs(addrs), " "))
	}
	c.psDocker(ctx, want, seen)
	return nil
}

// psDocker prints the running Docker containers on the mesh (the
// plugin's ethwe0...) that `weave attach` did not record.
func (c *cmd) psDocker(ctx context.Context, want, seen map[string]bool) {
	for _, t := range c.dockerContainers(ctx) {
		if seen[t.ID] || len(want) > 0 && !want[t.ID] {
			continue
		}
		mac, addrs, ok, err := c.Kernel.MeshAddrs(t.NetNS)
		if err != nil || !ok {
			continue
		}
		fmt.Fprintln(c.Stdout, strings.TrimRight(short(t.ID)+" "+mac.String()+" "+cidrs(addrs), " "))
	}
}

// short is Docker's 12-character id form.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
