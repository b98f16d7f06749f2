package kube

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/seedf75a49c6/weave/internal/cli"
)

// BridgeNFSysctl makes bridged frames traverse iptables (kube-proxy's
// service rules and the NetworkPolicy controller need it).
const BridgeNFSysctl = "net/bridge/bridge-nf-call-iptables"

// Init is the DaemonSet's init container: load br_netfilter (and xt_set
// when the NetworkPolicy controller is expected), turn on
// bridge-nf-call-iptables, and install the CNI plugins and conflist with
// `weave setup-cni --hairpin-mode=$HAIRPIN_MODE setupArgs...`.
func Init(ctx context.Context, cfg Config, procSys string, out io.Writer, setupArgs []string) error {
	modules := []string{"br_netfilter"}
	if cfg.ExpectNPC {
		modules = append(modules, "xt_set")
	}
	for _, m := range modules {
		if b, err := exec.CommandContext(ctx, "modprobe", m).CombinedOutput(); err != nil {
			// Built into the kernel, or already loaded by the host: the sysctl below tells.
			fmt.Fprintf(out, "weave-kube init: modprobe %s: %v: %s (ignored if it is built in)\n", m, err, strings.TrimSpace(string(b)))
		}
	}
	path := filepath.Join(procSys, BridgeNFSysctl)
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("set %s=1 (is br_netfilter loaded?): %w", BridgeNFSysctl, err)
	}
	w := cfg.Weave
	w.Stdout, w.Stderr = out, out
	args := append([]string{"setup-cni", "--hairpin-mode=" + strconv.FormatBool(cfg.HairpinMode)}, setupArgs...)
	if code := cli.Run(ctx, w, args); code != cli.ExitOK {
		return fmt.Errorf("weave setup-cni %s failed (exit %d)", strings.Join(setupArgs, " "), code)
	}
	return nil
}
