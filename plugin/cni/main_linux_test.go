package cni_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/seedf75a49c6/weave/internal/netnstest"
)

// build is what TestMain compiled: bin/ (weaver, weaveutil, weave-net,
// weave-ipam) next to a copy of the weave script.
var build struct {
	weave string // the weave script; bin/ is next to it
	bin   string
	err   error
}

func TestMain(m *testing.M) {
	netnstest.MainWithBuild(m, "weave-cni-test-", func(dir string) { build.err = buildAll(dir) })
}

func buildAll(dir string) error {
	weave, err := netnstest.BuildProduct(dir)
	build.weave, build.bin = weave, filepath.Join(dir, "bin")
	return err
}

// nsExec runs plugins inside a host namespace (with nsenter, as a
// runtime on that host would run them), with extra environment.
type nsExec struct {
	netns string
	env   []string
}

var _ invoke.Exec = (*nsExec)(nil)

func (e *nsExec) ExecPlugin(ctx context.Context, path string, stdin []byte, environ []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "nsenter", "--net="+e.netns, "--", path)
	cmd.Env = append(environ, e.env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var cniErr types.Error
		if jerr := json.Unmarshal(stdout.Bytes(), &cniErr); jerr != nil || cniErr.Msg == "" {
			return nil, fmt.Errorf("%s %s: %v; stdout %q; stderr %q", path, envCommand(environ), err, stdout.String(), stderr.String())
		}
		return nil, &cniErr
	}
	return stdout.Bytes(), nil
}

func envCommand(env []string) string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "CNI_COMMAND=") {
			return kv
		}
	}
	return ""
}

func (e *nsExec) FindInPath(plugin string, paths []string) (string, error) {
	return invoke.FindInPath(plugin, paths)
}

func (e *nsExec) Decode(data []byte) (version.PluginInfo, error) {
	return (&version.PluginDecoder{}).Decode(data)
}
