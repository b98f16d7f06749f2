package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// target is a resolved attach/detach/ps target.
type target struct {
	ID    string // IPAM/registry identity: container ID, netns name, PID, or path
	NetNS string // namespace path to act in
	// Hostname is a Docker container's host name, with its domain when
	// it has one (weaveDNS registers it); "" for namespaces and PIDs.
	Hostname string
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

// dockerContainer is the part of GET /containers/<id>/json we read.
type dockerContainer struct {
	ID    string `json:"Id"`
	State struct {
		Running bool
		Pid     int
	}
	Config struct {
		Hostname   string
		Domainname string
	}
}

// dockerTarget asks the Docker engine (over its unix socket) for the
// container's init pid.
func (c *cmd) dockerTarget(ctx context.Context, name string) (target, error) {
	notFound := fmt.Errorf("target %s: not a network namespace in %s, a PID, or a Docker container", name, c.NetnsDir)
	if _, err := os.Stat(c.DockerSocket); err != nil {
		return target{}, fmt.Errorf("%w (no Docker socket at %s)", notFound, c.DockerSocket)
	}
	ct, code, err := c.dockerInspect(ctx, name)
	switch {
	case err != nil:
		return target{}, fmt.Errorf("ask Docker about %s: %w", name, err)
	case code == http.StatusNotFound:
		return target{}, notFound
	case code != http.StatusOK:
		return target{}, fmt.Errorf("ask Docker about %s: HTTP %d", name, code)
	case !ct.State.Running || ct.State.Pid == 0:
		return target{}, fmt.Errorf("container %s is not running", name)
	}
	host := ct.Config.Hostname
	if host != "" && ct.Config.Domainname != "" {
		host += "." + ct.Config.Domainname
	}
	return target{ID: ct.ID, NetNS: filepath.Join(c.ProcDir, strconv.Itoa(ct.State.Pid), "ns", "net"), Hostname: host}, nil
}

func (c *cmd) dockerInspect(ctx context.Context, name string) (dockerContainer, int, error) {
	var ct dockerContainer
	sock := c.DockerSocket
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://docker/containers/"+url.PathEscape(name)+"/json", nil)
	if err != nil {
		return ct, 0, fmt.Errorf("build Docker request: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return ct, 0, fmt.Errorf("call Docker at %s: %w", sock, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return ct, resp.StatusCode, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(&ct); err != nil {
		return ct, resp.StatusCode, fmt.Errorf("decode Docker answer for %s: %w", name, err)
	}
	return ct, resp.StatusCode, nil
}
