// Command weaver is the weave router daemon: a mesh peer that bridges the
// local "weave" bridge to the other peers over the sleeve overlay, and
// serves the HTTP API the weave script talks to.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(exitCode(err))
}

// exitCode maps run's error to the process exit code, printing it.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "weaver: %v\n", err)
		return exitUsage
	default:
		fmt.Fprintf(os.Stderr, "weaver: %v\n", err)
		return exitFailure
	}
}
