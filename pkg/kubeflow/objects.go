package kubeflow

import (
	"context"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/kube"
)

// labelManagedBy marks the objects gpukit makes itself (not a chart's, not
// Kubeflow's): the status counts them apart, and an operator's own object
// of the same name (without it) is left alone where that matters.
const labelManagedBy = "app.kubernetes.io/managed-by"

// managedBy is that label on an object gpukit renders.
var managedBy = map[string]any{labelManagedBy: "gpukit"}

// ownLabels is that label on an object gpukit creates through a clientset.
func ownLabels() map[string]string { return map[string]string{labelManagedBy: "gpukit"} }

// madeByGpukit: labels carry gpukit's managed-by label.
func madeByGpukit(labels map[string]string) bool { return labels[labelManagedBy] == "gpukit" }

// rendered is what an objectsPhase applies.
type rendered struct {
	objs []*yaml.RNode
	// check: the objects a server-side dry-run compares with the cluster
	// (nil: objs); fresh non-empty: apply without comparing, and why.
	check []*yaml.RNode
	fresh string
	// what they are, for the plan and the logs.
	what string
}

// objectsPhase applies objects gpukit renders, server-side (kube.Apply,
// field manager gpukit); skipped when a server-side dry-run of them
// changes nothing.
type objectsPhase struct {
	p         *Platform
	id, title string
	action    string // the API write, as the plan names it
	enabled   bool
	render    func(ctx context.Context, h *engine.Host) (rendered, error)
	objs      []*yaml.RNode
	why       string
}

func (o *objectsPhase) Name() string  { return o.id }
func (o *objectsPhase) Title() string { return o.title }

func (o *objectsPhase) Targets(hosts []*engine.Host) []*engine.Host {
	if !o.enabled {
		return nil
	}
	return o.p.target(hosts)
}

func (o *objectsPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	r, err := o.render(ctx, h)
	if err != nil {
		return false, "", err
	}
	o.objs = r.objs
	c, err := o.p.api.Client(ctx, h)
	if err != nil {
		return false, "", err
	}
	switch {
	case r.fresh != "":
		o.why = r.what + ", " + r.fresh
		return true, "", nil
	case c == nil:
		o.why = fmt.Sprintf("%s: %d objects to create", r.what, len(r.objs))
		return true, "", nil
	}
	check := r.check
	if check == nil {
		check = r.objs
	}
	res, err := kube.Apply(ctx, c.Config, check, kube.ApplyOptions{DryRun: true})
	if err != nil {
		return false, "", fmt.Errorf("server-side dry-run of %s: %w", r.what, err)
	}
	if res.Created+res.Changed == 0 {
		return false, r.what + " as applied", nil
	}
	o.why = fmt.Sprintf("%s: %d to create, %d to change", r.what, res.Created, res.Changed)
	return true, "", nil
}

func (o *objectsPhase) Run(ctx context.Context, h *engine.Host) error {
	return h.WriteAPI(ctx, o.action, "server-side apply (field manager "+kube.FieldManager+"): "+o.why, func(ctx context.Context) error {
		c, err := o.p.api.Client(ctx, h)
		if err != nil {
			return err
		}
		_, err = kube.Apply(ctx, c.Config, o.objs, kube.ApplyOptions{Logf: h.Logf})
		return err
	})
}

// nodes turns objects written as Go maps into kyaml nodes, in order.
func nodes(docs ...any) ([]*yaml.RNode, error) {
	var out []*yaml.RNode
	for _, d := range docs {
		b, err := sigsyaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		n, err := kio.FromBytes(b)
		if err != nil {
			return nil, err
		}
		out = append(out, n...)
	}
	return out, nil
}
