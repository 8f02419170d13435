package kubeflow

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpukit/gpukit/pkg/charts"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/kube"
)

// Phase names of the platform, in the order they run.
const (
	PhaseStorage    = "platform/storage"
	PhaseIngress    = "platform/ingress"
	PhaseMonitoring = "platform/monitoring"
	PhaseGPUMetrics = "platform/gpu-metrics"
	// PhaseTrainingMetrics installs the statsd exporter training loops
	// push their metrics to.
	PhaseTrainingMetrics = "platform/training-metrics"
	// PhaseDashboards provisions gpukit's Grafana dashboards.
	PhaseDashboards = "platform/dashboards"
	PhaseManifests  = "kubeflow/manifests"
)

// releaseTimeout bounds the wait for a release's workloads to be ready.
const releaseTimeout = 10 * time.Minute

// Platform is the phases of `gpukit kubeflow deploy` (and the end of
// `gpukit init`): storage, ingress, monitoring, GPU and training metrics,
// dashboards, Kubeflow, the routes.
type Platform struct {
	site      Site
	api       kube.API
	target    func(hosts []*engine.Host) []*engine.Host
	manifests *Manifests // nil: Kubeflow is not deployed

	mu      sync.Mutex
	objs    []*yaml.RNode
	applied kube.ApplyResult
	creds   []Credential
	status  *Status
}

// Credential is a login gpukit generated, for the operator to keep: shown
// once by the command, written to a file only its owner reads.
type Credential struct {
	What, User, Password string
}

// New returns the platform phases for site, run from the hosts target
// picks (one: the API is reached from there through api - the first
// control plane of a cluster gpukit built, or this machine with a
// kubeconfig); m nil leaves Kubeflow out.
func New(site Site, api kube.API, target func([]*engine.Host) []*engine.Host, m *Manifests) *Platform {
	return &Platform{site: site, api: api, target: target, manifests: m}
}

// Credentials are the logins the run generated (an earlier run's are not
// shown again: they are in the cluster's secrets and the file it wrote).
func (p *Platform) Credentials() []Credential {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Credential(nil), p.creds...)
}

// Applied is what the Kubeflow phase's apply did.
func (p *Platform) Applied() kube.ApplyResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied
}

// Phases are the platform's phases in order; those the site turns off
// target no host.
func (p *Platform) Phases() []engine.Phase {
	byName := map[string]charts.Release{}
	for _, r := range p.site.Releases() {
		byName[r.Chart.Name] = r
	}
	release := func(id, title string, names ...string) *charts.Phase {
		var r charts.Release
		ok := false
		for _, n := range names {
			if rr, found := byName[n]; found {
				r, ok = rr, true
			}
		}
		return &charts.Phase{ID: id, Description: title, Release: r, Source: p.site.Charts, Access: p.site.ChartAccess, API: p.api,
			Target: func(hosts []*engine.Host) []*engine.Host {
				if !ok {
					return nil
				}
				return p.target(hosts)
			}}
	}
	monitoring := release(PhaseMonitoring, "Install Prometheus, Grafana and the exporters (kube-prometheus-stack)", MonitoringChart.Name)
	monitoring.Pending, monitoring.Before = p.grafanaPending, p.grafanaAdmin
	return []engine.Phase{
		release(PhaseStorage, "Install the default StorageClass's provisioner", LocalPathChart.Name, NFSChart.Name),
		release(PhaseIngress, "Install the Traefik ingress controller", TraefikChart.Name),
		monitoring,
		release(PhaseGPUMetrics, "Install NVIDIA's DCGM exporter, scraped by Prometheus", DCGMChart.Name),
		p.trainingMetricsPhase(),
		p.dashboardsPhase(),
		&manifestsPhase{p: p},
		p.routesPhase(p.site.Routes(p.manifests != nil)),
	}
}

// grafanaPending: the admin login secret is missing.
func (p *Platform) grafanaPending(ctx context.Context, h *engine.Host) (string, error) {
	cs, err := p.clientset(ctx, h)
	if err != nil || cs == nil {
		return "the cluster does not exist yet", err
	}
	s, err := cs.CoreV1().Secrets(MonitoringNamespace).Get(ctx, GrafanaAdminSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "Grafana's admin login is not generated yet", nil
	}
	if err != nil {
		return "", err
	}
	h.AddSecret(string(s.Data["admin-password"]))
	return "", nil
}

// grafanaAdmin makes Grafana's admin login, a generated password, unless
// the secret is there (its password is kept: the operator has it).
func (p *Platform) grafanaAdmin(ctx context.Context, h *engine.Host) error {
	why, err := p.grafanaPending(ctx, h)
	if err != nil || why == "" {
		return err
	}
	pw, err := password()
	if err != nil {
		return err
	}
	h.AddSecret(pw)
	return h.WriteAPI(ctx, "generate Grafana's admin login", "Secret "+MonitoringNamespace+"/"+GrafanaAdminSecret+" with a generated password", func(ctx context.Context) error {
		cs, err := p.clientset(ctx, h)
		if err != nil {
			return err
		}
		if err := ensureNamespace(ctx, cs, MonitoringNamespace, privileged); err != nil {
			return err
		}
		_, err = cs.CoreV1().Secrets(MonitoringNamespace).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: GrafanaAdminSecret, Labels: ownLabels()},
			StringData: map[string]string{"admin-user": "admin", "admin-password": pw},
		}, metav1.CreateOptions{FieldManager: kube.FieldManager})
		if err == nil {
			p.remember(h, "Grafana", "admin", pw)
		}
		return err
	})
}

func (p *Platform) remember(h *engine.Host, what, user, pw string) {
	h.AddSecret(pw)
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.creds {
		if c.What == what {
			p.creds[i] = Credential{what, user, pw}
			return
		}
	}
	p.creds = append(p.creds, Credential{what, user, pw})
}

// password is 24 random bytes, URL-safe base64 (32 characters).
func password() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (p *Platform) clientset(ctx context.Context, h *engine.Host) (kubernetes.Interface, error) {
	c, err := p.api.Client(ctx, h)
	if err != nil || c == nil {
		return nil, err
	}
	return c.Clientset, nil
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string, labels map[string]string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{FieldManager: kube.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// manifestsPhase builds Kubeflow's example in-process and applies it
// server-side in dependency order (kube.Apply); skipped when a
// server-side dry-run of it changes nothing.
type manifestsPhase struct {
	p         *Platform
	why       string
	saveLogin func(context.Context) error
}

func (m *manifestsPhase) Name() string { return PhaseManifests }
func (m *manifestsPhase) Title() string {
	return "Build Kubeflow's manifests and apply them in dependency order"
}

func (m *manifestsPhase) Targets(hosts []*engine.Host) []*engine.Host {
	if m.p.manifests == nil {
		return nil
	}
	return m.p.target(hosts)
}

// objects builds the manifests once a run.
func (m *manifestsPhase) objects(ctx context.Context, h *engine.Host) ([]*yaml.RNode, error) {
	m.p.mu.Lock()
	defer m.p.mu.Unlock()
	if m.p.objs == nil {
		start := time.Now()
		objs, err := m.p.manifests.Load(ctx, func(format string, args ...any) { h.Logf(PhaseManifests+": "+format, args...) })
		if err != nil {
			return nil, err
		}
		h.Logf("%s: Kubeflow %s built in %s: %d objects (%s)", PhaseManifests, m.p.manifests.Version, time.Since(start).Round(time.Millisecond), len(objs), Summary(objs))
		if m.saveLogin, err = m.p.login(ctx, h, objs); err != nil {
			return nil, fmt.Errorf("Kubeflow %s's default login: %w", m.p.manifests.Version, err)
		}
		m.p.objs = objs
	}
	return m.p.objs, nil
}

func (m *manifestsPhase) ShouldRun(ctx context.Context, h *engine.Host) (bool, string, error) {
	objs, err := m.objects(ctx, h)
	if err != nil {
		return false, "", err
	}
	c, err := m.p.api.Client(ctx, h)
	if err != nil {
		return false, "", err
	}
	if c == nil {
		m.why = fmt.Sprintf("the cluster does not exist yet: %d objects to create (%s)", len(objs), Summary(objs))
		return true, "", nil
	}
	// A namespace of the release missing: a first deploy (or one that
	// stopped early), no need for a dry-run of every object to say so.
	if missing, err := missingNamespaces(ctx, c.Clientset, objs); err != nil {
		return false, "", err
	} else if len(missing) > 0 {
		m.why = fmt.Sprintf("Kubeflow %s: namespace(s) %s missing: %d objects to apply (%s)", m.p.manifests.Version, strings.Join(missing, ", "), len(objs), Summary(objs))
		h.Logf("%s: %s", PhaseManifests, m.why)
		return true, "", nil
	}
	res, err := kube.Apply(ctx, c.Config, objs, kube.ApplyOptions{DryRun: true, Logf: h.Logf})
	if err != nil {
		return false, "", fmt.Errorf("server-side dry-run of Kubeflow %s: %w", m.p.manifests.Version, err)
	}
	if res.Created+res.Changed == 0 && m.saveLogin == nil {
		return false, fmt.Sprintf("Kubeflow %s: %d objects applied as built", m.p.manifests.Version, res.Unchanged), nil
	}
	m.why = fmt.Sprintf("Kubeflow %s: %d of %d objects to create, %d to change (%s)", m.p.manifests.Version, res.Created, len(objs), res.Changed, Summary(objs))
	h.Logf("%s: %s", PhaseManifests, m.why)
	return true, "", nil
}

func (m *manifestsPhase) Run(ctx context.Context, h *engine.Host) error {
	objs, err := m.objects(ctx, h)
	if err != nil {
		return err
	}
	if m.saveLogin != nil {
		if err := m.saveLogin(ctx); err != nil {
			return err
		}
	}
	return h.WriteAPI(ctx, "apply Kubeflow "+m.p.manifests.Version, "server-side apply (field manager "+kube.FieldManager+"): "+m.why, func(ctx context.Context) error {
		c, err := m.p.api.Client(ctx, h)
		if err != nil {
			return err
		}
		res, err := kube.Apply(ctx, c.Config, objs, kube.ApplyOptions{Logf: h.Logf})
		m.p.mu.Lock()
		m.p.applied = res
		m.p.mu.Unlock()
		h.Logf("%s: %d created, %d changed, %d unchanged", PhaseManifests, res.Created, res.Changed, res.Unchanged)
		return err
	})
}

// missingNamespaces are the Namespace objects of objs the cluster lacks.
func missingNamespaces(ctx context.Context, cs kubernetes.Interface, objs []*yaml.RNode) ([]string, error) {
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, n := range list.Items {
		have[n.Name] = true
	}
	var missing []string
	for _, o := range objs {
		if o.GetKind() == "Namespace" && !have[o.GetName()] {
			missing = append(missing, o.GetName())
		}
	}
	return missing, nil
}
