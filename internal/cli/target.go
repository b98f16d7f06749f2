package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// target is a resolved attach/detach/ps target.
type target struct {
	ID    string // IPAM/registry identity: container ID, netns name, PID, or path
	NetNS string // namespace path to act in
	// Hostname is a Docker container's host name, with its domain when
	// it has one (weaveDNS registers it); "" for namespaces and PIDs.
	Hostname string
	// HostsPath is a Docker container's /etc/hosts on the host ("" otherwise).
	HostsPath string
}

// vethID is the ContainerID given to netdev, which names the host veth
// vethwepl<first 7 chars>. Long non-hex names would collide after 7
// characters, so they are replaced by a hash.
func (t target) vethID() string {
	if len(t.ID) <= 7 || isHex(t.ID) {
		return t.ID
	}
	sum := sha256.Sum256([]byte(t.ID))
	return hex.EncodeToString(sum[:])[:7]
}

// safeName reports whether s can be a container ID or name (Docker's
// rule: [a-zA-Z0-9][a-zA-Z0-9_.-]*, at most 255 bytes), so that it is
// never a path element such as "..".
func safeName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("_.-", c)) {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

func isDigits(s string) bool {
	_, err := strconv.ParseUint(s, 10, 31)
	return err == nil
}

// resolveTarget turns a user's target into a namespace: a netns path, a
// bare netns name (in NetnsDir), a PID, or a Docker container.
func (c *cmd) resolveTarget(ctx context.Context, s string) (target, error) {
	switch {
	case s == "":
		return target{}, errors.New("empty target")
	case strings.HasPrefix(s, "/"):
		return c.targetFromPath(s)
	case isDigits(s):
		p := filepath.Join(c.ProcDir, s, "ns", "net")
		if _, err := os.Stat(p); err != nil {
			return target{}, fmt.Errorf("target %s: no process with that PID", s)
		}
		return target{ID: s, NetNS: p}, nil
	case !strings.Contains(s, "/"):
		if !safeName(s) {
			return target{}, fmt.Errorf("target %q: not a container ID or name, PID or namespace path", s)
		}
		p := filepath.Join(c.NetnsDir, s)
		if _, err := os.Stat(p); err == nil {
			return target{ID: s, NetNS: p}, nil
		}
	}
	return c.dockerTarget(ctx, s)
}

func (c *cmd) targetFromPath(p string) (target, error) {
	if _, err := os.Stat(p); err != nil {
		return target{}, fmt.Errorf("target %s: no such network namespace", p)
	}
	if filepath.Dir(p) == filepath.Clean(c.NetnsDir) {
		return target{ID: filepath.Base(p), NetNS: p}, nil
	}
	// /proc/PID/ns/net
	rel, err := filepath.Rel(c.ProcDir, p)
	if parts := strings.Split(rel, "/"); err == nil && len(parts) == 3 && isDigits(parts[0]) && parts[1] == "ns" {
		return target{ID: parts[0], NetNS: p}, nil
	}
	return target{ID: p, NetNS: p}, nil
}
