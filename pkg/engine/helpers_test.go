package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// funcPhase is a Phase built from functions; nil functions do the default.
type funcPhase struct {
	name      string
	run       func(ctx context.Context, h *engine.Host) error
	shouldRun func(ctx context.Context, h *engine.Host) (bool, string, error)
	targets   func(hosts []*engine.Host) []*engine.Host
	cleanUp   func(ctx context.Context, h *engine.Host) error
	stopRun   bool
}

func (p *funcPhase) Name() string  { return p.name }
func (p *funcPhase) Title() string { return "Title of " + p.name }
func (p *funcPhase) Run(ctx context.Context, h *engine.Host) error {
	if p.run == nil {
		return nil
	}
	return p.run(ctx, h)
}
func (p *funcPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	if p.shouldRun == nil {
		return true, "", nil
	}
	return p.shouldRun(ctx, h)
}
func (p *funcPhase) Targets(hosts []*engine.Host) []*engine.Host {
	if p.targets == nil {
		return hosts
	}
	return p.targets(hosts)
}
func (p *funcPhase) CleanUp(ctx context.Context, h *engine.Host) error {
	if p.cleanUp == nil {
		return nil
	}
	return p.cleanUp(ctx, h)
}
func (p *funcPhase) StopRunOnFailure() bool { return p.stopRun }

// planPhase adds Plan to a funcPhase.
type planPhase struct {
	funcPhase
	plan func(ctx context.Context, h *engine.Host) ([]engine.PlannedAction, error)
}

func (p *planPhase) Plan(ctx context.Context, h *engine.Host) ([]engine.PlannedAction, error) {
	return p.plan(ctx, h)
}

// probeAndApply is the typical phase: read, then write.
func probeAndApply(name string) *funcPhase {
	return &funcPhase{name: name, run: func(ctx context.Context, h *engine.Host) error {
		if _, err := h.Run(ctx, "probe", ssh.Command{Script: "echo probe " + name}); err != nil {
			return err
		}
		_, err := h.Apply(ctx, "change", ssh.Command{Script: "echo change " + name})
		return err
	}}
}

// byHandler answers by script: a map from a script substring to a result.
func byScript(answers map[string]ssh.Result) enginetest.Handler {
	return func(_ context.Context, _ *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
		for k, v := range answers {
			if strings.Contains(cmd.Script, k) {
				return v, nil
			}
		}
		return ssh.Result{}, nil
	}
}

func run(t *testing.T, r *engine.Runner, fleet *enginetest.Fleet, n int) (*engine.Summary, error, *enginetest.Recorder) {
	t.Helper()
	rec := &enginetest.Recorder{}
	r.Sink = rec
	sum, err := r.Run(context.Background(), enginetest.Hosts(n), fleet.Dial)
	return sum, err, rec
}

// hostEvents returns the types of the events of one host, in order.
func hostEvents(rec *enginetest.Recorder, host string) []string {
	var out []string
	for _, e := range rec.Events() {
		if e.Host == host {
			out = append(out, string(e.Type)+":"+e.Phase+":"+e.Step)
		}
	}
	return out
}

// preparePhase adds Prepare to a funcPhase.
type preparePhase struct {
	funcPhase
	prepare func(ctx context.Context, all, targets []*engine.Host) error
}

func (p *preparePhase) Prepare(ctx context.Context, all, targets []*engine.Host) error {
	return p.prepare(ctx, all, targets)
}
