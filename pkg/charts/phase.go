package charts

import (
	"context"
	"fmt"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/kube"
)

// Phase installs one release through the API from one host of the run (a
// control plane whose connection reaches the API server): skipped when
// the release is deployed as wanted, planned in a dry-run. Kubernetes'
// add-ons and the platform are each one.
type Phase struct {
	ID, Description string
	Release         Release
	Source          Source
	// Access reaches an oci:// Source (AccessOf).
	Access Access
	// API reaches the cluster from h; its client is nil (no error) in a
	// dry-run before the cluster exists.
	API kube.API
	// Target picks the host the phase runs from.
	Target func(hosts []*engine.Host) []*engine.Host
	// Pending says what else the phase has to do although the release is
	// as wanted ("" for nothing); optional.
	Pending func(ctx context.Context, h *engine.Host) (string, error)
	// Before runs before the release is installed, After once it is (not
	// in a dry-run); both optional.
	Before, After func(ctx context.Context, h *engine.Host) error

	why string // set by ShouldRun
}

func (p *Phase) Name() string                                { return p.ID }
func (p *Phase) Title() string                               { return p.Description }
func (p *Phase) Targets(hosts []*engine.Host) []*engine.Host { return p.Target(hosts) }

func (p *Phase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	c, err := Helm(ctx, p.API, h)
	if err != nil {
		return false, "", err
	}
	if c == nil {
		p.why = "the cluster does not exist yet"
		return true, "", nil
	}
	if p.why, err = c.Pending(ctx, p.Release); err != nil {
		return false, "", err
	}
	if p.why == "" && p.Pending != nil {
		if p.why, err = p.Pending(ctx, h); err != nil {
			return false, "", err
		}
	}
	if p.why == "" {
		return false, fmt.Sprintf("release %s/%s deployed from chart %s as wanted", p.Release.Namespace, p.Release.Name, p.Release.Chart), nil
	}
	h.Logf("%s: %s", p.ID, p.why)
	return true, "", nil
}

func (p *Phase) Run(ctx context.Context, h *engine.Host) error {
	r := p.Release
	// Loading the chart is a read: a plan shows a chart it cannot find.
	ch, err := p.Source.LoadWith(ctx, r.Chart, p.Access)
	if err != nil {
		return err
	}
	if p.Before != nil {
		if err := p.Before(ctx, h); err != nil {
			return err
		}
	}
	what := fmt.Sprintf("helm install or upgrade %s/%s from chart %s (%s)", r.Namespace, r.Name, r.Chart, p.why)
	err = h.WriteAPI(ctx, "install "+r.Chart.Name+" "+r.Chart.Version, what, func(ctx context.Context) error {
		c, err := Helm(ctx, p.API, h)
		if err != nil {
			return err
		}
		return c.Apply(ctx, r, ch)
	})
	if err != nil || p.After == nil || h.DryRun() {
		return err
	}
	return p.After(ctx, h)
}
