// Command gpukit turns a rack of baremetal GPU servers into a GPU cluster.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpukit/gpukit/internal/cli"
)

func main() {
	// A closed terminal (the operator's SSH session dropped) stops a run as
	// Ctrl-C does, at its next safe point with its state written, instead
	// of killing it between a drain and an uncordon.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := cli.Execute(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
