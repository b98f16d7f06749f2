package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TargetsFileName holds the persisted connection targets in the data dir,
// one host[:port] per line; --resume reconnects to them.
const TargetsFileName = "targets"

// SaveTargets atomically replaces dataDir/targets with targets.
func SaveTargets(dataDir string, targets []string) error {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("create data dir %s: %w", dataDir, err)
	}
	path := filepath.Join(dataDir, TargetsFileName)
	var b strings.Builder
	for _, t := range targets {
		b.WriteString(t)
		b.WriteString("\n")
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write targets %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename targets %s: %w", path, err)
	}
	return nil
}

// LoadTargets returns the persisted targets; none (and no error) when the
// file does not exist.
func LoadTargets(dataDir string) ([]string, error) {
	path := filepath.Join(dataDir, TargetsFileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read targets %s: %w", path, err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out, nil
}

// CheckTarget validates a connection target: host, host:port, an IPv6
// address bare or as [v6] or [v6]:port, with a port of 1-65535 when one
// is given.
func CheckTarget(t string) error {
	host, port := t, ""
	if h, p, err := net.SplitHostPort(t); err == nil {
		host, port = h, p
	} else if strings.Contains(t, ":") && !strings.HasPrefix(t, "[") && strings.Count(t, ":") == 1 {
		return fmt.Errorf("invalid value %q (want host[:port]): %w", t, err)
	} else if strings.HasPrefix(t, "[") {
		if !strings.HasSuffix(t, "]") {
			return fmt.Errorf("invalid value %q (want [IPv6 address] or [IPv6 address]:port)", t)
		}
		host = t[1 : len(t)-1]
	}
	if strings.Contains(host, ":") || strings.HasPrefix(t, "[") {
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return fmt.Errorf("invalid value %q: %q is not an IPv6 address", t, host)
		}
	}
	if host == "" || strings.HasPrefix(host, "-") || strings.ContainsAny(host, " /\t") {
		return fmt.Errorf("invalid value %q (want host[:port])", t)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("invalid value %q: port %q is not 1-65535", t, port)
		}
	}
	return nil
}

// validTargets splits targets into the valid ones and an error for each
// invalid one.
func validTargets(targets []string) ([]string, []error) {
	var ok []string
	var errs []error
	for _, t := range targets {
		if err := CheckTarget(t); err != nil {
			errs = append(errs, err)
			continue
		}
		ok = append(ok, t)
	}
	return ok, errs
}
