// Command gpukit turns a rack of baremetal GPU servers into a GPU cluster.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/gpukit/gpukit/internal/cli"
)

func main() {
	// A closed terminal (the operator's SSH session dropped) stops a run as
	// Ctrl-C does, at its next safe point with its state written, instead
	// of killing it between a drain and an uncordon.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := profile()
	code := cli.Execute(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	done()
	stop()
	os.Exit(code)
}

// profile writes a CPU profile of the run to $GPUKIT_CPUPROFILE and a heap
// profile at its end to $GPUKIT_MEMPROFILE (bench/: where a fan-out's time
// and memory go); neither set, nothing. A profile that cannot be written is
// said on stderr and the run goes on.
func profile() (done func()) {
	var stops []func()
	if p := os.Getenv("GPUKIT_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err != nil {
			fmt.Fprintf(os.Stderr, "gpukit: GPUKIT_CPUPROFILE: %v\n", err)
		} else if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "gpukit: GPUKIT_CPUPROFILE: %v\n", err)
			f.Close()
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if p := os.Getenv("GPUKIT_MEMPROFILE"); p != "" {
		stops = append(stops, func() {
			f, err := os.Create(p)
			if err == nil {
				runtime.GC()
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "gpukit: GPUKIT_MEMPROFILE: %v\n", err)
			}
		})
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}
