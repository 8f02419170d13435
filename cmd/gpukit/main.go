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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
