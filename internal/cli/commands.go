package cli

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/seedf75a49c6/weave/internal/api"
	"github.com/seedf75a49c6/weave/internal/version"
)

// runStatus prints GET /status (framed by blank lines, as Weave's script
// does) or GET /status/<sub> raw.
func runStatus(ctx context.Context, c *cmd, args []string) error {
	sub, err := parseStatus(args)
	if err != nil {
		return err
	}
	body, err := c.api.Status(ctx, sub)
	if err != nil {
		return err
	}
	if sub == "" {
		fmt.Fprintf(c.Stdout, "\n%s\n", withNewline(body))
		return nil
	}
	fmt.Fprint(c.Stdout, body)
	return nil
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// runReport prints the JSON report or a template applied to it.
func runReport(ctx context.Context, c *cmd, args []string) error {
	format, err := parseReport(args)
	if err != nil {
		return err
	}
	var body string
	if format == "" {
		body, err = c.api.Report(ctx)
	} else {
		body, err = c.api.ReportFormat(ctx, format)
	}
	if err != nil {
		return err
	}
	fmt.Fprint(c.Stdout, body)
	return nil
}

// runVersion prints the script version and the router's, from the API or
// from `weaver --version` when no router runs.
func runVersion(ctx context.Context, c *cmd, args []string) error {
	if len(args) > 0 {
		return usagef("version: unexpected arguments %q", args)
	}
	fmt.Fprintf(c.Stdout, "weave script %s\n", version.Version)
	v, err := c.api.Version(ctx)
	if err != nil {
		c.Logger.Debug("router version from API failed", "err", err)
		v = c.weaverVersion(ctx)
	}
	fmt.Fprintf(c.Stdout, "weave router %s\n", v)
	return nil
}

func (c *cmd) weaverVersion(ctx context.Context) string {
	path, err := c.weaverPath()
	if err != nil {
		return "(unknown: router not running and weaver not found)"
	}
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	fields := strings.Fields(string(out))
	if err != nil || len(fields) == 0 {
		return "(unknown: weaver --version failed)"
	}
	return fields[len(fields)-1] // "weave router 1.2.3" or "1.2.3"
}

func runConnect(ctx context.Context, c *cmd, args []string) error {
	peers, replace, err := parseConnect(args)
	if err != nil {
		return err
	}
	return c.api.Connect(ctx, peers, replace)
}

func runForget(ctx context.Context, c *cmd, args []string) error {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return usagef("forget: unknown option %q", a)
		}
	}
	if len(args) == 0 {
		return usagef("forget: give at least one peer")
	}
	return c.api.Forget(ctx, args)
}

// noRoute reports a 404 of the router's HTTP mux itself (no handler for
// the path, as for the IPAM routes when IPAM is off), not of a handler.
func noRoute(err error) bool {
	var he *api.HTTPError
	return errors.As(err, &he) && he.Code == 404 && he.Message == "404 page not found"
}

func runRmpeer(ctx context.Context, c *cmd, args []string) error {
	if len(args) == 0 {
		return usagef("rmpeer: give at least one peer name")
	}
	for _, p := range args {
		msg, err := c.api.RemovePeer(ctx, p)
		if noRoute(err) {
			return fmt.Errorf("rmpeer %s: this router runs without IPAM (--ipalloc-range \"\"): %w", p, err)
		}
		if api.StatusCode(err) == 404 {
			return fmt.Errorf("rmpeer %s: no such peer in the IPAM ring: %w", p, err)
		}
		if err != nil {
			return err
		}
		fmt.Fprint(c.Stdout, withNewline(msg))
	}
	return nil
}

// runExpose gives the bridge addresses (allocated in IPAM for
// "weave:expose" when none are given, or for net: forms) and asks the
// router to put them on the bridge with NAT.
func runExpose(ctx context.Context, c *cmd, args []string) error {
	specs, opts, err := parseAddrList("expose", args, "--without-masquerade")
	if err != nil {
		return err
	}
	addrs, err := c.attachAddrs(ctx, ExposeIdent, specs)
	if err != nil {
		return fmt.Errorf("expose: %w", err)
	}
	for _, a := range addrs {
		err := c.api.Expose(ctx, a, opts["--without-masquerade"])
		if api.StatusCode(err) == 404 {
			err = fmt.Errorf("expose %s: this router does not implement POST /expose yet: %w", a, err)
		}
		if err != nil {
			c.releaseAll(ctx, ExposeIdent, addrs)
			return err
		}
	}
	fmt.Fprintln(c.Stdout, ipsOnly(addrs))
	return nil
}

// runHide removes addresses from the bridge: the given CIDRs, or every
// address IPAM holds for "weave:expose" (without IPAM: every bridge address).
func runHide(ctx context.Context, c *cmd, args []string) error {
	addrs, _, err := parseCIDRList("hide", args)
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		if addrs, err = c.exposedAddrs(ctx); err != nil {
			return err
		}
	}
	for _, a := range addrs {
		if err := c.Kernel.Hide(c.Bridge, a); err != nil {
			return fmt.Errorf("hide %s: %w", a, err)
		}
		if err := c.api.ReleaseIP(ctx, ExposeIdent, a.Addr()); err != nil && !ipamAbsent(err) {
			c.Logger.Warn("could not release exposed address in IPAM", "cidr", a, "err", err)
		}
	}
	fmt.Fprintln(c.Stdout, ipsOnly(addrs))
	return nil
}

// exposedAddrs is what `weave hide` without addresses removes.
func (c *cmd) exposedAddrs(ctx context.Context) ([]netip.Prefix, error) {
	addrs, err := c.api.LookupIP(ctx, ExposeIdent)
	if err == nil {
		return addrs, nil
	}
	if !ipamAbsent(err) {
		return nil, fmt.Errorf("hide: look up exposed addresses: %w", err)
	}
	_, addrs, _, err = c.Kernel.BridgeAddrs(c.Bridge)
	if err != nil {
		return nil, fmt.Errorf("hide: read addresses of %s: %w", c.Bridge, err)
	}
	return addrs, nil
}

// runReset tells IPAM we leave, stops the router and removes every trace:
// bridge, iptables rules, persisted state and the attachment registry.
func runReset(ctx context.Context, c *cmd, args []string) error {
	force := false
	for _, a := range args {
		if a != "--force" {
			return usagef("reset: unknown argument %q", a)
		}
		force = true
	}
	if err := c.removeDockerNetwork(ctx); err != nil {
		if !force {
			return fmt.Errorf("reset: %w (use --force to reset anyway)", err)
		}
		c.Logger.Warn("reset: could not remove the Docker network", "err", err)
	}
	if err := c.api.DeletePeer(ctx); err != nil && !ipamAbsent(err) {
		if !force {
			return fmt.Errorf("reset: hand over IP ranges (use --force to reset anyway): %w", err)
		}
		c.Logger.Warn("reset: could not hand over IP ranges", "err", err)
	}
	if err := c.stopRouter(ctx); err != nil {
		return err
	}
	steps := []func() error{
		func() error { return c.Kernel.DestroyBridge(c.Bridge) },
		func() error { return c.Kernel.RemoveIPTables(c.Bridge) },
		c.removeState,
	}
	var errs []error
	for _, step := range steps {
		if err := step(); err != nil {
			if !force {
				return fmt.Errorf("reset: %w", err)
			}
			errs = append(errs, err)
		}
	}
	for _, err := range errs {
		fmt.Fprintf(c.Stderr, "reset (ignored with --force): %v\n", err)
	}
	return nil
}

// stateGlobs are the data-dir files reset deletes: our weaver's peer name
// and persisted targets (mesh.PeerNameFile, weaver.TargetsFileName), and
// Weave's databases (weavedata.db, weave-netdata.db).
var stateGlobs = []string{"peername", "targets", "weave*", "*.db"}

func (c *cmd) removeState() error {
	for _, g := range stateGlobs {
		files, err := filepath.Glob(filepath.Join(c.DataDir, g))
		if err != nil {
			return fmt.Errorf("list state files %s: %w", g, err)
		}
		for _, f := range files {
			if st, err := os.Lstat(f); err != nil || st.IsDir() {
				continue
			}
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove state file %s: %w", f, err)
			}
		}
	}
	if err := os.RemoveAll(c.registryDir()); err != nil {
		return fmt.Errorf("remove attachment registry %s: %w", c.registryDir(), err)
	}
	return nil
}
