// Command weave-kube is what the weave-net DaemonSet runs on every node (in
// place of Weave Net 2.8.1's weave-kube image): `weave-kube init` in the
// init container installs the CNI plugin; `weave-kube` in container
// "weave" starts and supervises weaver, finds peers from the Kubernetes
// API and reclaims the address space of deleted Nodes (package kube).
// Settings come from the environment, as the manifest sets it; see
// docs/kubernetes.md.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/seedf75a49c6/weave/internal/version"
	"github.com/seedf75a49c6/weave/kube"
)

const usage = `usage: weave-kube [init [setup-cni flags] | version]
  weave-kube                 run weaver and follow the cluster's Nodes (container "weave")
  weave-kube init [flags]    load br_netfilter, set bridge-nf-call-iptables, weave setup-cni [flags]
  weave-kube version         print the version
Settings are environment variables (HOSTNAME, KUBE_PEERS, IPALLOC_RANGE, ...): see docs/kubernetes.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, nil)).With("component", "weave-kube")
	verb := ""
	if len(args) > 0 {
		verb, args = args[0], args[1:]
	}
	switch verb {
	case "version", "--version":
		fmt.Fprintf(stdout, "weave-kube %s\n", version.Version)
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	case "", "init":
	default:
		fmt.Fprintf(stderr, "weave-kube: unknown command %q\n%s", verb, usage)
		return 2
	}
	cfg, err := kube.ConfigFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "weave-kube: bad settings:\n%v\n", err)
		return 2
	}
	if verb == "init" {
		err = kube.Init(ctx, cfg, "/proc/sys", stdout, args)
	} else {
		err = kube.Run(ctx, cfg, log, stderr)
	}
	if err != nil {
		log.Error("exiting", "err", err)
		return 1
	}
	return 0
}
