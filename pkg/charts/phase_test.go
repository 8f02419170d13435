package charts

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/kube"
)

// apiFunc is a kube.API from a function.
type apiFunc func(ctx context.Context, h kube.Host) (*kube.Client, error)

func (f apiFunc) Client(ctx context.Context, h kube.Host) (*kube.Client, error) { return f(ctx, h) }

// The phase without a cluster: in a dry-run before the cluster exists it
// plans the install (the chart found first, Before run, After not);
// a chart its source lacks fails the plan; the API's error is the phase's.
func TestPhaseWithoutACluster(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	saveChart(t, testChart("web", "1.0.0"), dir, "")
	var calls []string
	phase := func(version string, api kube.API) *Phase {
		calls = nil
		return &Phase{
			ID: "platform/web", Description: "web",
			Release: webRelease(version, nil), Source: Source(dir), API: api,
			Target: func(hosts []*engine.Host) []*engine.Host { return hosts[:1] },
			Pending: func(context.Context, *engine.Host) (string, error) {
				calls = append(calls, "pending")
				return "", nil
			},
			Before: func(context.Context, *engine.Host) error { calls = append(calls, "before"); return nil },
			After:  func(context.Context, *engine.Host) error { calls = append(calls, "after"); return nil },
		}
	}
	noCluster := apiFunc(func(context.Context, kube.Host) (*kube.Client, error) { return nil, nil })
	host := func(rec *enginetest.Recorder) *engine.Host {
		return engine.NewHost(inventory.Machine{Name: "cp-1"}, nil, engine.HostOptions{DryRun: true, Sink: rec, Phase: "platform/web"})
	}

	t.Run("a dry-run before the cluster exists plans the install", func(t *testing.T) {
		rec := &enginetest.Recorder{}
		h := host(rec)
		p := phase("1.0.0", noCluster)
		if got := p.Targets([]*engine.Host{h, host(rec)}); len(got) != 1 || got[0] != h {
			t.Errorf("targets %v", got)
		}
		run, skip, err := p.ShouldRun(ctx, h)
		if !run || skip != "" || err != nil {
			t.Fatalf("ShouldRun = %v %q %v", run, skip, err)
		}
		if err := p.Run(ctx, h); err != nil {
			t.Fatal(err)
		}
		planned := rec.OfType(event.Planned)
		if len(planned) != 1 || planned[0].Step != "install web 1.0.0" ||
			planned[0].Message != "helm install or upgrade ns-web/web from chart web 1.0.0 (the cluster does not exist yet)" {
			t.Errorf("planned %+v", planned)
		}
		if strings.Join(calls, ",") != "before" {
			t.Errorf("calls %v: want Before only (Pending is for an installed release, After for a real run)", calls)
		}
		if !h.Changed() {
			t.Error("the host is not marked changed")
		}
	})

	t.Run("a chart the source lacks fails the plan", func(t *testing.T) {
		rec := &enginetest.Recorder{}
		h := host(rec)
		p := phase("2.0.0", noCluster)
		if _, _, err := p.ShouldRun(ctx, h); err != nil {
			t.Fatal(err)
		}
		err := p.Run(ctx, h)
		if err == nil || err.Error() != "chart web 2.0.0: no web-2.0.0.tgz in "+dir {
			t.Errorf("error %v", err)
		}
		if len(calls) != 0 || len(rec.OfType(event.Planned)) != 0 {
			t.Errorf("calls %v, planned %v", calls, rec.OfType(event.Planned))
		}
	})

	t.Run("Before's error stops the phase", func(t *testing.T) {
		rec := &enginetest.Recorder{}
		h := host(rec)
		p := phase("1.0.0", noCluster)
		p.Before = func(context.Context, *engine.Host) error { return errors.New("no storage class") }
		if _, _, err := p.ShouldRun(ctx, h); err != nil {
			t.Fatal(err)
		}
		if err := p.Run(ctx, h); err == nil || err.Error() != "no storage class" {
			t.Errorf("error %v", err)
		}
		if len(rec.OfType(event.Planned)) != 0 {
			t.Errorf("planned %v", rec.OfType(event.Planned))
		}
	})

	t.Run("the API's error", func(t *testing.T) {
		p := phase("1.0.0", apiFunc(func(context.Context, kube.Host) (*kube.Client, error) {
			return nil, errors.New("the admin kubeconfig: no such file")
		}))
		run, _, err := p.ShouldRun(ctx, host(&enginetest.Recorder{}))
		if run || err == nil || err.Error() != "the admin kubeconfig: no such file" {
			t.Errorf("ShouldRun = %v, %v", run, err)
		}
	})
}
