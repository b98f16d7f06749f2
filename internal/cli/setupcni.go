package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/seedf75a49c6/weave/internal/api"
)

// Defaults and names of `weave setup-cni`.
const (
	DefaultCNIBinDir  = "/opt/cni/bin"
	DefaultCNIConfDir = "/etc/cni/net.d"
	CNIConflistName   = "10-weave.conflist"
)

// cniBinaries are installed from next to weaveutil (or WEAVE_BIN_DIR/PATH).
var cniBinaries = []string{"weave-net", "weave-ipam"}

// weaveConflist is what setup-cni writes: cniVersion 1.0.0 (the newest
// podman 4.3's libcni accepts), weave-net then portmap, as Weave Net
// 2.8.1 installs it. %s is where an httpAddr member goes, %t the
// hairpinMode (2.8.1's DaemonSet knob HAIRPIN_MODE, default true).
const weaveConflist = `{
  "cniVersion": "1.0.0",
  "name": "weave",
  "plugins": [
    {
      "name": "weave",
      "type": "weave-net",%s
      "hairpinMode": %t
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true},
      "snat": true
    }
  ]
}
`

// conflistFor is weaveConflist, naming the router's API address when it
// is not the default (kubelet gives plugins no WEAVE_HTTP_ADDR).
func conflistFor(httpAddr string, hairpin bool) string {
	member := ""
	if httpAddr != "" && httpAddr != api.DefaultAddr {
		b, _ := json.Marshal(httpAddr)
		member = "\n      \"httpAddr\": " + string(b) + ","
	}
	return fmt.Sprintf(weaveConflist, member, hairpin)
}

type setupCNIArgs struct {
	binDir, confDir string
	force           bool
	hairpin         bool // --hairpin-mode=<bool>, default true
}

func parseSetupCNI(args []string) (setupCNIArgs, error) {
	a := setupCNIArgs{binDir: DefaultCNIBinDir, confDir: DefaultCNIConfDir, hairpin: true}
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(args[i], "=")
		switch name {
		case "--force":
			a.force = true
			continue
		case "--hairpin-mode":
			b, err := strconv.ParseBool(val)
			if !hasVal || err != nil {
				return a, usagef("setup-cni: --hairpin-mode=true or --hairpin-mode=false, not %q", args[i])
			}
			a.hairpin = b
			continue
		case "--cni-bin-dir", "--cni-conf-dir":
		default:
			return a, usagef("setup-cni: unknown argument %q", args[i])
		}
		if !hasVal {
			if i+1 >= len(args) {
				return a, usagef("setup-cni: %s needs a directory", name)
			}
			i++
			val = args[i]
		}
		if val == "" {
			return a, usagef("setup-cni: %s needs a directory", name)
		}
		if name == "--cni-bin-dir" {
			a.binDir = val
		} else {
			a.confDir = val
		}
	}
	return a, nil
}

// runSetupCNI installs weave-net, weave-ipam and 10-weave.conflist. It is
// idempotent, and refuses to replace a conflist that is not weave's
// (ours or Weave Net 2.8.1's) unless --force is given.
func runSetupCNI(_ context.Context, c *cmd, args []string) error {
	a, err := parseSetupCNI(args)
	if err != nil {
		return err
	}
	for _, name := range cniBinaries {
		src, err := c.findBinary(name)
		if err != nil {
			return fmt.Errorf("setup-cni: %w", err)
		}
		changed, err := installFile(src, filepath.Join(a.binDir, name), 0o755)
		if err != nil {
			return fmt.Errorf("setup-cni: %w", err)
		}
		c.report(changed, "installed", "up to date", filepath.Join(a.binDir, name))
	}
	conf := filepath.Join(a.confDir, CNIConflistName)
	if err := checkConflistOwner(conf, a.force); err != nil {
		return err
	}
	changed, err := writeFileAtomic(conf, []byte(conflistFor(c.HTTPAddr, a.hairpin)), 0o644)
	if err != nil {
		return fmt.Errorf("setup-cni: %w", err)
	}
	c.report(changed, "wrote", "up to date", conf)
	if _, err := os.Stat(filepath.Join(a.binDir, "portmap")); err != nil {
		fmt.Fprintf(c.Stderr, "setup-cni: note: no portmap plugin in %s (Debian: containernetworking-plugins); the conflist's second plugin needs it\n", a.binDir)
	}
	return nil
}

func (c *cmd) report(changed bool, did, same, path string) {
	if changed {
		fmt.Fprintf(c.Stdout, "%s %s\n", did, path)
	} else {
		fmt.Fprintf(c.Stdout, "%s %s\n", same, path)
	}
}

// checkConflistOwner allows writing path when it is absent, already
// weave's, or force is set.
func checkConflistOwner(path string, force bool) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || force {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setup-cni: read %s: %w", path, err)
	}
	if !isWeaveConflist(data) {
		return fmt.Errorf("setup-cni: %s exists and was not written by weave; not replacing it (use --force to overwrite)", path)
	}
	return nil
}

// isWeaveConflist reports whether data has exactly the shape setup-cni
// (or Weave Net 2.8.1's `weave setup-cni`) writes; only cniVersion and
// the hairpinMode and httpAddr values may differ.
func isWeaveConflist(data []byte) bool {
	var have, want map[string]any
	if json.Unmarshal(data, &have) != nil || json.Unmarshal([]byte(conflistFor("", true)), &want) != nil {
		return false
	}
	if _, ok := have["cniVersion"].(string); !ok {
		return false
	}
	have["cniVersion"] = want["cniVersion"]
	if plugins, ok := have["plugins"].([]any); ok && len(plugins) > 0 {
		if p, ok := plugins[0].(map[string]any); ok {
			if _, isBool := p["hairpinMode"].(bool); isBool {
				p["hairpinMode"] = true
			}
			if _, isString := p["httpAddr"].(string); isString {
				delete(p, "httpAddr")
			}
		}
	}
	return reflect.DeepEqual(have, want)
}

// installFile copies src to dst unless dst already has the same content.
func installFile(src, dst string, mode os.FileMode) (bool, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", src, err)
	}
	return writeFileAtomic(dst, data, mode)
}

// writeFileAtomic writes data to path through a temporary file in the
// same directory and a rename (a runtime never sees half a file, and a
// running binary is not overwritten in place). It reports false, and
// writes nothing, when path already holds data.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		if st, err := os.Stat(path); err == nil && st.Mode().Perm() == mode {
			return false, nil
		}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return false, fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Chmod(mode), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}
