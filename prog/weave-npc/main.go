// Command weave-npc enforces Kubernetes NetworkPolicies on the weave bridge
// of the node it runs on, as 2.8.1's weave-npc container does: it watches
// Pods, Namespaces and NetworkPolicies and keeps the nftables table
// `inet weave-npc` in step (see docs/npc.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/seedf75a49c6/weave/npc/controller"
	"github.com/seedf75a49c6/weave/npc/nft"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], os.Stderr, os.Getenv)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "weave-npc: %v\n", err)
		if errors.Is(err, flag.ErrHelp) || errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

type options struct {
	nodeName, kubeconfig, metricsAddr, bridge, table, logLevel, netns string
	poll                                                              time.Duration
	allowMcast                                                        bool
}

func parseFlags(args []string, stderr io.Writer, getenv func(string) string) (options, error) {
	var o options
	fs := flag.NewFlagSet("weave-npc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.nodeName, "node-name", getenv("HOSTNAME"), "this node's name: pods with this spec.nodeName are enforced here")
	fs.StringVar(&o.kubeconfig, "kubeconfig", getenv("KUBECONFIG"), "kubeconfig file; empty: in-cluster service account")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":6781", "address of the /metrics and /healthz server; empty: none")
	fs.StringVar(&o.bridge, "bridge", "weave", "bridge the pods are attached to")
	fs.StringVar(&o.table, "table", nft.DefaultTable, "name of our nftables table (family inet)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.netns, "netns", "", "enforce in the network namespace at this path (default: the one weave-npc runs in); the API is still reached from the current one")
	fs.DurationVar(&o.poll, "blocked-poll-interval", 5*time.Second, "how often blocked-connection counters are read, logged and exported")
	// Accepted for 2.8.1 DaemonSet compatibility; they have no effect here.
	fs.BoolVar(&o.allowMcast, "allow-mcast", true, "let multicast (224.0.0.0/4) pass isolated pods, as 2.8.1 does")
	fs.Int("max-list-size", 1024, "ignored (2.8.1 compatibility: nftables sets have no list-set limit)")
	fs.String("bridge-port-name", "vethwe-bridge", "ignored (2.8.1 compatibility)")
	if err := fs.Parse(args); err != nil {
		return o, usageError{err}
	}
	if fs.NArg() > 0 {
		return o, usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if o.nodeName == "" {
		return o, usageError{errors.New("--node-name is required (or set HOSTNAME)")}
	}
	return o, nil
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: %w", level, err)}
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config (or pass --kubeconfig): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

func run(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string) error {
	o, err := parseFlags(args, stderr, getenv)
	if err != nil {
		return err
	}
	log, err := newLogger(stderr, o.logLevel)
	if err != nil {
		return err
	}
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	enf, err := openEnforcer(o, log)
	if err != nil {
		return err
	}
	defer enf.Close()
	return serve(ctx, o, log, client, enf)
}

// openEnforcer turns on br_netfilter and opens the nftables connection,
// both in the --netns namespace.
func openEnforcer(o options, log *slog.Logger) (*nft.Enforcer, error) {
	var enf *nft.Enforcer
	err := inNetNS(o.netns, func() error {
		changed, err := nft.EnsureBridgeNetfilter()
		if err != nil {
			return err
		}
		if changed {
			log.Warn("turned on net.bridge.bridge-nf-call-iptables: bridged pod traffic must pass the inet forward hook")
		}
		enf, err = nft.New(nft.Config{Bridge: o.bridge, Table: o.table, AllowMulticast: o.allowMcast})
		return err
	})
	return enf, err
}

func serve(ctx context.Context, o options, log *slog.Logger, client kubernetes.Interface, enf *nft.Enforcer) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c, err := controller.New(controller.Config{Client: client, NodeName: o.nodeName, Enforcer: enf, Log: log,
		Registerer: reg, PollInterval: o.poll})
	if err != nil {
		return err
	}
	if o.metricsAddr != "" {
		ln, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("listen on --metrics-addr %s: %w", o.metricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		log.Info("serving metrics", "addr", ln.Addr().String())
	}
	log.Info("weave-npc starting", "node", o.nodeName, "bridge", o.bridge, "table", "inet "+o.table)
	return c.Run(ctx)
}
