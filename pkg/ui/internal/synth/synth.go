// Package synth makes synthetic event streams of a gpukit run over any
// number of hosts, for the display tests and the tuidemo program: waves of
// hosts through each phase, output lines, some failures and skips.
package synth

import (
	"context"
	"fmt"
	"time"

	"github.com/gpukit/gpukit/pkg/event"
)

// Config shapes a synthetic run.
type Config struct {
	Title string
	Hosts int
	// Phases after connect; default preflight/facts, nvidia/driver,
	// runtime/toolkit.
	Phases []string
	// Concurrency is the wave size (hosts worked on at once); default 64.
	Concurrency int
	// FailEvery makes every FailEvery-th host fail the second phase.
	FailEvery int
	// UnreachableEvery makes every n-th host fail to connect.
	UnreachableEvery int
	// Lines of output per host and phase.
	Lines int
	// Wave is the simulated duration of one wave; default 1s.
	Wave time.Duration
	// Hang leaves the last phase running forever (no RunDone): Play then
	// waits for cancellation, as a real run stuck in a reboot would.
	Hang bool
	// Start is the time of the first event.
	Start time.Time
}

func (c *Config) defaults() {
	if c.Title == "" {
		c.Title = "gpukit init"
	}
	if len(c.Phases) == 0 {
		c.Phases = []string{"preflight/facts", "nvidia/driver", "runtime/toolkit"}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.Wave <= 0 {
		c.Wave = time.Second
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	}
}

// HostName is the name of host i (0-based).
func HostName(i int) string { return fmt.Sprintf("gpu-%04d", i+1) }

// Events returns the whole stream, in time order, deterministically.
func Events(cfg Config) []event.Event {
	cfg.defaults()
	var out []event.Event
	t := cfg.Start
	emit := func(e event.Event) {
		e.Time = t
		out = append(out, e)
	}
	phases := append([]string{"connect"}, cfg.Phases...)
	emit(event.Event{Type: event.RunStart, Title: cfg.Title, Total: cfg.Hosts, Phases: phases, Log: "/var/log/gpukit/20250601-120000"})
	healthy := make([]int, cfg.Hosts)
	for i := range healthy {
		healthy[i] = i
	}
	failedHosts := 0
	for pi, phase := range phases {
		last := pi == len(phases)-1
		phaseStart := t
		emit(event.Event{Type: event.PhaseStart, Phase: phase, Title: "Title of " + phase, Total: len(healthy)})
		var next []int
		var ok, failed, skipped int
		for w := 0; w < len(healthy); w += cfg.Concurrency {
			wave := healthy[w:min(w+cfg.Concurrency, len(healthy))]
			waveStart := t
			for _, i := range wave {
				emit(event.Event{Type: event.HostStart, Phase: phase, Host: HostName(i)})
				emit(event.Event{Type: event.StepStart, Phase: phase, Host: HostName(i), Step: "step of " + phase})
			}
			if last && cfg.Hang {
				return out
			}
			for l := 0; l < cfg.Lines; l++ {
				t = waveStart.Add(cfg.Wave * time.Duration(l+1) / time.Duration(cfg.Lines+1))
				for _, i := range wave {
					emit(event.Event{Type: event.Output, Phase: phase, Host: HostName(i), Step: "step of " + phase,
						Stream: event.Stdout, Line: fmt.Sprintf("%s: progress %d/%d", phase, l+1, cfg.Lines)})
				}
			}
			t = waveStart.Add(cfg.Wave)
			for _, i := range wave {
				h := HostName(i)
				switch {
				case pi == 0 && cfg.UnreachableEvery > 0 && (i+1)%cfg.UnreachableEvery == 0:
					emit(event.Event{Type: event.HostFailed, Phase: phase, Host: h, Status: event.StatusFailed,
						Err: fmt.Sprintf("dial tcp 10.0.%d.%d:22: connect: connection refused", i/250, i%250+1)})
					failed++
				case pi == 2 && cfg.FailEvery > 0 && (i+1)%cfg.FailEvery == 0:
					emit(event.Event{Type: event.Output, Phase: phase, Host: h, Step: "step of " + phase, Stream: event.Stderr,
						Line: "E: Unable to locate package nvidia-driver-580-open"})
					emit(event.Event{Type: event.HostFailed, Phase: phase, Host: h, Status: event.StatusFailed,
						Err: "install driver: exit status 100: E: Unable to locate package nvidia-driver-580-open",
						Log: "/var/log/gpukit/20250601-120000/" + h + ".log", DurationMS: cfg.Wave.Milliseconds()})
					failed++
				case pi == 3 && (i+1)%5 == 0:
					emit(event.Event{Type: event.HostSkipped, Phase: phase, Host: h, Status: event.StatusSkipped,
						Message: "nvidia-container-toolkit 1.17.8 already installed"})
					skipped++
					next = append(next, i)
				default:
					emit(event.Event{Type: event.HostDone, Phase: phase, Host: h, Status: event.StatusOK, DurationMS: cfg.Wave.Milliseconds()})
					ok++
					next = append(next, i)
				}
			}
			t = t.Add(time.Millisecond)
		}
		failedHosts += failed
		emit(event.Event{Type: event.PhaseDone, Phase: phase, Done: ok, Failed: failed, Skipped: skipped,
			Total: len(healthy), DurationMS: t.Sub(phaseStart).Milliseconds()})
		healthy = next
	}
	status := event.StatusOK
	if failedHosts > 0 {
		status = event.StatusFailed
	}
	emit(event.Event{Type: event.RunDone, Title: cfg.Title, Status: status, Done: cfg.Hosts - failedHosts,
		Failed: failedHosts, Total: cfg.Hosts, Log: "/var/log/gpukit/20250601-120000",
		DurationMS: t.Sub(cfg.Start).Milliseconds()})
	return out
}

// Play emits events into sink at speed times their recorded pace, stamped
// with the real time. When ctx ends first it emits a cancelled RunDone, as
// the engine does, and returns ctx.Err(); a stream without RunDone (Hang)
// waits for ctx.
func Play(ctx context.Context, sink event.Sink, events []event.Event, speed float64) error {
	if len(events) == 0 {
		return nil
	}
	if speed <= 0 {
		speed = 1
	}
	realStart := time.Now()
	first := events[0].Time
	var total, failed int
	cancelled := func() error {
		sink.Emit(event.Event{Time: time.Now(), Type: event.RunDone, Status: event.StatusCancelled,
			Failed: failed, Skipped: total - failed, Total: total})
		return ctx.Err()
	}
	for _, e := range events {
		due := realStart.Add(time.Duration(float64(e.Time.Sub(first)) / speed))
		if d := time.Until(due); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return cancelled()
			}
		}
		e.Time = time.Now()
		sink.Emit(e)
		switch e.Type {
		case event.RunStart:
			total = e.Total
		case event.HostFailed:
			failed++
		case event.RunDone:
			return nil
		}
	}
	<-ctx.Done()
	return cancelled()
}
