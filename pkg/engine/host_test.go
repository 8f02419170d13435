package engine_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// A host made with NewHost and no options works in phase unit tests: steps
// run, nothing is emitted; a Host literal has no connection at all.
func TestNewHostDefaults(t *testing.T) {
	t.Parallel()
	e := enginetest.NewExecutor("h", nil)
	h := engine.NewHost(inventory.Machine{Name: "h"}, e, engine.HostOptions{})
	if _, err := h.Apply(context.Background(), "w", ssh.Command{Script: "true"}); err != nil || h.DryRun() {
		t.Fatal(err)
	}
	h.Logf("no log, no panic")
	if got := e.Names(); !reflect.DeepEqual(got, []string{"w"}) {
		t.Errorf("ran %v", got)
	}
	if _, err := (&engine.Host{}).Run(context.Background(), "x", ssh.Command{}); err == nil {
		t.Error("a host without a connection ran a step")
	}
}

func TestStepOutputIsSplitIntoLines(t *testing.T) {
	t.Parallel()
	e := enginetest.NewExecutor("h", func(_ context.Context, _ *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		// Chunks that split lines, carriage-return progress, no final newline.
		for _, chunk := range []string{"fir", "st\nsec", "ond\r\n", "10%\r50%\r100%\n\n", "last"} {
			_, _ = cmd.Stdout.Write([]byte(chunk))
		}
		return ssh.Result{}, nil
	})
	rec := &enginetest.Recorder{}
	h := engine.NewHost(inventory.Machine{Name: "h"}, e, engine.HostOptions{Sink: rec, Phase: "p"})
	var mine bytes.Buffer
	if _, err := h.Run(context.Background(), "step", ssh.Command{Script: "x", Stdout: &mine}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, ev := range rec.OfType(event.Output) {
		if ev.Host != "h" || ev.Phase != "p" || ev.Step != "step" || ev.Stream != event.Stdout {
			t.Errorf("event %+v", ev)
		}
		lines = append(lines, ev.Line)
	}
	want := []string{"first", "second", "10%", "50%", "100%", "last"}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("lines %q, want %q", lines, want)
	}
	if !strings.HasPrefix(mine.String(), "first\nsecond") {
		t.Errorf("the caller's own writer got %q", mine.String())
	}
}

func TestStepErrorsNameTheStepOnce(t *testing.T) {
	t.Parallel()
	e := enginetest.NewExecutor("h", func(_ context.Context, _ *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		if cmd.Name == "exit" {
			return ssh.Result{ExitCode: 2, Stderr: []byte("nope")}, nil
		}
		return ssh.Result{}, errors.New("connection reset")
	})
	h := engine.NewHost(inventory.Machine{}, e, engine.HostOptions{})
	_, err := h.Run(context.Background(), "exit", ssh.Command{})
	if err.Error() != "exit: exit status 2: nope" {
		t.Errorf("got %q", err)
	}
	_, err = h.Run(context.Background(), "other", ssh.Command{})
	if err.Error() != "other: connection reset" {
		t.Errorf("got %q", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.Handler = func(context.Context, *enginetest.Executor, ssh.Command) (ssh.Result, error) {
		return ssh.Result{}, errors.New("session closed")
	}
	if err := h.Upload(ctx, "up", ssh.File{Path: "/x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled upload: %v", err)
	}
}

func TestDryRunHostRecordsArgs(t *testing.T) {
	t.Parallel()
	rec := &enginetest.Recorder{}
	e := enginetest.NewExecutor("h", nil)
	h := engine.NewHost(inventory.Machine{Name: "h"}, e, engine.HostOptions{DryRun: true, Sink: rec})
	if _, err := h.Apply(context.Background(), "install", ssh.Command{Script: "apt-get install \"$1\"", Args: []string{"it's"}}); err != nil {
		t.Fatal(err)
	}
	ev := rec.OfType(event.Planned)
	if len(ev) != 1 || ev[0].Script != "# args: 'it'\\''s'\napt-get install \"$1\"" || len(e.Commands()) != 0 {
		t.Errorf("planned %+v, ran %d", ev, len(e.Commands()))
	}
}
