// Command weaveutil is the Go side of the `weave` command: the weave shim
// execs it with the user's arguments and all logic lives in internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/seedf75a49c6/weave/internal/cli"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := cli.ConfigFromEnv(os.Getenv)
	cfg.Kernel = netdevKernel{}
	return cli.Run(ctx, cfg, args)
}
