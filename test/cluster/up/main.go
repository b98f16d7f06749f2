// Command up is `make cluster`: a real 3-node cluster (package
// test/cluster) with the weave-net DaemonSet applied from the image
// `make image` built, for a person to try; Ctrl-C tears it all down.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/seedf75a49c6/weave/test/cluster"
)

func main() {
	nodes := flag.Int("nodes", 3, "number of nodes")
	ipt := flag.String("iptables", "nft", "iptables backend of the nodes: nft or legacy")
	archive := flag.String("image", ".build/image/weave-kube.tar", "the weave-kube image archive (make image)")
	manifest := flag.String("manifest", ".build/image/weave-daemonset-k8s.yaml", "the manifest to apply (make image writes it naming the image); empty: apply nothing")
	flag.Parse()
	if err := run(*nodes, *ipt, *archive, *manifest); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(nodes int, ipt, archive, manifest string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c, err := cluster.Start(cluster.Options{Nodes: nodes, IPTables: ipt, Logf: func(f string, a ...any) { fmt.Printf(f+"\n", a...) }})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("tearing down...")
		c.Stop()
		if left := c.Leftovers(); len(left) > 0 {
			fmt.Println("left behind:", left)
		}
	}()
	if manifest != "" {
		if err := c.ImportImage(archive); err != nil {
			return fmt.Errorf("%w (run make image first)", err)
		}
		m, err := os.ReadFile(manifest)
		if err != nil {
			return err
		}
		if out, err := c.Kubectl(ctx, m, "apply", "-f", "-"); err != nil {
			return err
		} else {
			fmt.Print(out)
		}
	}
	kubectl := filepath.Join(c.Dir, "kubectl")
	script := fmt.Sprintf("#!/bin/sh\nexec nsenter --net=/run/netns/%s %s --kubeconfig=%s \"$@\"\n", c.Underlay, c.Bins.Kubectl, c.Kubeconfig)
	if err := os.WriteFile(kubectl, []byte(script), 0o755); err != nil {
		return err
	}
	fmt.Printf("\ncluster up: %d nodes (namespaces %s-n1..), control plane in namespace %s at https://%s\n", nodes, c.Prefix, c.Underlay, cluster.ControlIP)
	fmt.Printf("  %s get nodes,pods -A -o wide      # kubectl as admin\n", kubectl)
	fmt.Printf("  nsenter --net=/run/netns/%s-n1 ...  # a shell on node1's network\n", c.Prefix)
	fmt.Printf("  logs: %s/logs\nCtrl-C to tear down.\n", c.Dir)
	<-ctx.Done()
	return nil
}
