package kubeflow

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpukit/gpukit/pkg/charts"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/kube"
)

// PhaseStatus reads the platform's state (gpukit kubeflow status).
const PhaseStatus = "kubeflow/status"

// Status is the platform as the cluster runs it.
type Status struct {
	Releases []ReleaseStatus `json:"releases"`
	// Kubeflow counts the Deployments gpukit applied from Kubeflow's
	// manifests (its field manager's objects); Platform those it renders
	// itself (the statsd exporter).
	Kubeflow Deployments `json:"kubeflow"`
	Platform Deployments `json:"platform"`
	URLs     []string    `json:"urls,omitempty"`
}

// Deployments: Available of all, and those that are not.
type Deployments struct {
	Deployments  int      `json:"deployments"`
	Available    int      `json:"available"`
	NotAvailable []string `json:"notAvailable,omitempty"`
}

func (d *Deployments) add(dep *appsv1.Deployment) {
	d.Deployments++
	if available(dep) {
		d.Available++
	} else {
		d.NotAvailable = append(d.NotAvailable, dep.Namespace+"/"+dep.Name)
	}
}

// ReleaseStatus is one release: the chart version deployed and Helm's
// status, beside the version gpukit pins.
type ReleaseStatus struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Chart     string `json:"chart"`
	Want      string `json:"want"`
	Deployed  string `json:"deployed,omitempty"`
	Status    string `json:"status"`
}

// Healthy: every release deployed at its pinned version, every Deployment
// gpukit applied Available.
func (s *Status) Healthy() bool {
	for _, r := range s.Releases {
		if r.Status != "deployed" || r.Deployed != r.Want {
			return false
		}
	}
	return len(s.Kubeflow.NotAvailable)+len(s.Platform.NotAvailable) == 0
}

// StatusPhase reads the releases, Kubeflow's Deployments and the URLs;
// it changes nothing.
func (p *Platform) StatusPhase() engine.Phase { return &statusPhase{p: p} }

// ReadStatus is what the status phase read (nil before it ran).
func (p *Platform) ReadStatus() *Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

type statusPhase struct{ p *Platform }

func (*statusPhase) Name() string { return PhaseStatus }
func (*statusPhase) Title() string {
	return "Read the platform's releases, Kubeflow's Deployments and the URLs"
}
func (s *statusPhase) Targets(hosts []*engine.Host) []*engine.Host {
	return s.p.target(hosts)
}

func (s *statusPhase) Run(ctx context.Context, h *engine.Host) error {
	c, err := charts.Helm(ctx, s.p.api, h)
	if err != nil {
		return err
	}
	cs, err := s.p.clientset(ctx, h)
	if err != nil {
		return err
	}
	st := &Status{}
	for _, r := range s.p.site.Releases() {
		v, status, err := c.Deployed(r)
		if err != nil {
			return err
		}
		st.Releases = append(st.Releases, ReleaseStatus{Name: r.Name, Namespace: r.Namespace, Chart: r.Chart.Name, Want: r.Chart.Version, Deployed: v, Status: status})
	}
	list, err := cs.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, d := range list.Items {
		if !appliedBy(&d, kube.FieldManager) {
			continue
		}
		if madeByGpukit(d.Labels) {
			st.Platform.add(&d)
		} else {
			st.Kubeflow.add(&d)
		}
	}
	slices.Sort(st.Kubeflow.NotAvailable)
	slices.Sort(st.Platform.NotAvailable)
	for _, r := range s.p.site.Routes(st.Kubeflow.Deployments > 0) {
		st.URLs = append(st.URLs, "https://"+r.Host+"/")
	}
	s.p.mu.Lock()
	s.p.status = st
	s.p.mu.Unlock()
	return nil
}

func appliedBy(d *appsv1.Deployment, manager string) bool {
	for _, f := range d.ManagedFields {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == "True"
		}
	}
	return false
}
