// Command tuidemo replays a synthetic run through a gpukit display, to look
// at the TUI by hand at any fleet size:
//
//	go run ./pkg/ui/internal/tuidemo -hosts 1000 -fail-every 97
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/gpukit/gpukit/pkg/ui"
	"github.com/gpukit/gpukit/pkg/ui/internal/synth"
)

func main() {
	var cfg synth.Config
	flag.IntVar(&cfg.Hosts, "hosts", 100, "number of hosts")
	flag.IntVar(&cfg.Concurrency, "concurrency", 64, "hosts per wave")
	flag.IntVar(&cfg.FailEvery, "fail-every", 23, "every n-th host fails the driver phase (0: none)")
	flag.IntVar(&cfg.UnreachableEvery, "unreachable-every", 0, "every n-th host cannot be reached (0: none)")
	flag.IntVar(&cfg.Lines, "lines", 5, "output lines per host and phase")
	flag.DurationVar(&cfg.Wave, "wave", time.Second, "simulated time per wave")
	flag.BoolVar(&cfg.Hang, "hang", false, "never finish the last phase (try ctrl+c)")
	speed := flag.Float64("speed", 1, "replay speed")
	output := flag.String("output", "auto", "display: auto, plain or json")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	format, err := ui.ParseFormat(*output)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tuidemo:", err)
		os.Exit(2)
	}
	d := ui.New(ui.Decide(os.Stdout, format, os.Getenv), ui.WithTitle("gpukit demo"), ui.WithCancel(cancel))
	err = synth.Play(ctx, d, synth.Events(cfg), *speed)
	if cerr := d.Close(); cerr != nil {
		fmt.Fprintln(os.Stderr, "display:", cerr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tuidemo:", err)
		os.Exit(130)
	}
}
