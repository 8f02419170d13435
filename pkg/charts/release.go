package charts

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/kube"
)

// Release is an add-on as gpukit wants it installed.
type Release struct {
	Name, Namespace string
	Chart           Chart
	Values          map[string]any
	// NamespaceLabels are put on the namespace, created when missing
	// (pod-security levels for node agents).
	NamespaceLabels map[string]string
	// Wait for its workloads to be ready, up to Timeout.
	Wait    bool
	Timeout time.Duration
	// CRDsServerSide applies the chart's CRDs (its and its subcharts'
	// crds/) server-side before every install and upgrade, each waited for
	// until Established: Helm creates them on the first install only and
	// never upgrades them, so a chart upgrade would run on old schemas.
	CRDsServerSide bool
}

// Client installs releases into one cluster.
type Client struct {
	cfg  *rest.Config
	raw  []byte
	cs   kubernetes.Interface
	logf func(format string, args ...any)
	// helm, when set, is Helm's configuration for a namespace instead of
	// one on the cluster's Secrets (tests: Helm's in-memory storage).
	helm func(namespace string) (*action.Configuration, error)
}

// NewClient returns the Helm client of k's cluster: the releases are made
// with k's configuration (its dialer: the tunnel through a control plane)
// and k's kubeconfig's contexts. logf receives Helm's debug lines (a
// host's log).
func NewClient(k *kube.Client, logf func(string, ...any)) *Client {
	return &Client{cfg: k.Config, raw: k.Kubeconfig, cs: k.Clientset, logf: logf}
}

// Helm is the Helm client of api's cluster reached from h, Helm's debug
// lines in h's log; nil (no error) when api has no client (a dry-run
// before the cluster exists).
func Helm(ctx context.Context, api kube.API, h *engine.Host) (*Client, error) {
	k, err := api.Client(ctx, h)
	if err != nil || k == nil {
		return nil, err
	}
	return NewClient(k, func(format string, args ...any) { h.Logf("helm: "+format, args...) }), nil
}

// Pending says why r must be installed or upgraded: "" when the release is
// deployed from r's chart version with r's values.
func (c *Client) Pending(ctx context.Context, r Release) (string, error) {
	rel, version, status, err := c.get(r)
	switch {
	case err != nil:
		return "", err
	case rel == nil:
		return "release " + r.Namespace + "/" + r.Name + " is not installed", nil
	case status != release.StatusDeployed.String():
		return "release " + r.Name + " is " + status, nil
	case version != r.Chart.Version:
		return fmt.Sprintf("release %s runs chart %s %s, not %s", r.Name, r.Chart.Name, cmp.Or(version, "?"), r.Chart.Version), nil
	}
	want, err := normal(r.Values)
	if err != nil {
		return "", err
	}
	have, err := normal(rel.Config)
	if err != nil {
		return "", err
	}
	if !reflect.DeepEqual(want, have) {
		return "release " + r.Name + "'s values are not as wanted", nil
	}
	if why, err := c.namespacePending(ctx, r); why != "" || err != nil {
		return why, err
	}
	return "", nil
}

// normal is v as Helm stores it (through JSON), so that equal values compare
// equal whatever Go types built them.
func normal(v map[string]any) (map[string]any, error) {
	if len(v) == 0 {
		return map[string]any{}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(b, &out)
}

func (c *Client) namespacePending(ctx context.Context, r Release) (string, error) {
	ns, err := c.cs.CoreV1().Namespaces().Get(ctx, r.Namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "namespace " + r.Namespace + " is missing", nil
	}
	if err != nil {
		return "", err
	}
	for k, v := range r.NamespaceLabels {
		if ns.Labels[k] != v {
			return "namespace " + r.Namespace + " lacks label " + k + "=" + v, nil
		}
	}
	return "", nil
}

// Apply installs r from ch, or upgrades the release to it.
func (c *Client) Apply(ctx context.Context, r Release, ch *chart.Chart) error {
	if err := c.ensureNamespace(ctx, r); err != nil {
		return err
	}
	cfg, err := c.action(r.Namespace)
	if err != nil {
		return err
	}
	values, err := normal(r.Values)
	if err != nil {
		return err
	}
	if r.CRDsServerSide {
		if err := c.applyCRDs(ctx, ch); err != nil {
			return fmt.Errorf("release %s/%s (chart %s): CRDs: %w", r.Namespace, r.Name, r.Chart, err)
		}
	}
	_, err = action.NewHistory(cfg).Run(r.Name)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace = r.Name, r.Namespace
		in.SkipCRDs = r.CRDsServerSide
		in.Wait, in.Timeout = r.Wait, r.Timeout
		_, err = in.RunWithContext(ctx, ch, values)
	case err == nil:
		up := action.NewUpgrade(cfg)
		up.Namespace = r.Namespace
		up.Wait, up.Timeout = r.Wait, r.Timeout
		up.MaxHistory = 10
		_, err = up.RunWithContext(ctx, r.Name, ch, values)
	}
	if err != nil {
		return fmt.Errorf("release %s/%s (chart %s): %w", r.Namespace, r.Name, r.Chart, err)
	}
	return nil
}

// applyCRDs applies the CRDs ch carries, server-side, and waits for them.
func (c *Client) applyCRDs(ctx context.Context, ch *chart.Chart) error {
	var objs []*yaml.RNode
	for _, crd := range ch.CRDObjects() {
		nodes, err := kio.FromBytes(crd.File.Data)
		if err != nil {
			return fmt.Errorf("%s: %w", crd.Filename, err)
		}
		objs = append(objs, nodes...)
	}
	if len(objs) == 0 {
		return nil
	}
	_, err := kube.Apply(ctx, c.cfg, objs, kube.ApplyOptions{Logf: c.logf})
	return err
}

func (c *Client) ensureNamespace(ctx context.Context, r Release) error {
	nss := c.cs.CoreV1().Namespaces()
	ns, err := nss.Get(ctx, r.Namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Namespace, Labels: r.NamespaceLabels}}, metav1.CreateOptions{FieldManager: "gpukit"})
		return err
	}
	if err != nil {
		return err
	}
	changed := false
	for k, v := range r.NamespaceLabels {
		if ns.Labels[k] != v {
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels[k], changed = v, true
		}
	}
	if changed {
		_, err = nss.Update(ctx, ns, metav1.UpdateOptions{FieldManager: "gpukit"})
	}
	return err
}

// action is Helm's configuration for one namespace, releases stored as
// Secrets there (Helm's default).
func (c *Client) action(namespace string) (*action.Configuration, error) {
	if c.helm != nil {
		return c.helm(namespace)
	}
	raw, err := clientcmd.Load(c.raw)
	if err != nil {
		return nil, err
	}
	g := &restGetter{cfg: c.cfg, loader: clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: namespace}})}
	cfg := new(action.Configuration)
	logf := c.logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := cfg.Init(g, namespace, "secret", logf); err != nil {
		return nil, err
	}
	return cfg, nil
}

// restGetter gives Helm the client settings gpukit made (the dialer
// through the control plane included) instead of a kubeconfig file.
type restGetter struct {
	cfg    *rest.Config
	loader clientcmd.ClientConfig
}

var _ genericclioptions.RESTClientGetter = (*restGetter)(nil)

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(g.cfg))
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(dc), nil
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(dc), dc, nil), nil
}

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig { return g.loader }

// Render is r's manifest as `helm template` renders it, without a cluster:
// the chart's templates with r's values, validated against the chart's
// values schema, hooks included, CRDs not, for a cluster of kubeVersion
// (v1.37.2) serving apiVersions beyond Kubernetes' own (a chart renders
// its ServiceMonitor only when monitoring.coreos.com/v1 is served).
func Render(ctx context.Context, r Release, ch *chart.Chart, kubeVersion string, apiVersions ...string) (string, error) {
	values, err := normal(r.Values)
	if err != nil {
		return "", err
	}
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		return "", err
	}
	in := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	in.ClientOnly, in.DryRun, in.DryRunOption, in.Replace = true, true, "client", true
	in.ReleaseName, in.Namespace, in.KubeVersion, in.APIVersions = r.Name, r.Namespace, kv, apiVersions
	rel, err := in.RunWithContext(ctx, ch, values)
	if err != nil {
		return "", fmt.Errorf("release %s/%s (chart %s): %w", r.Namespace, r.Name, r.Chart, err)
	}
	out := rel.Manifest
	for _, h := range rel.Hooks {
		out += "\n---\n# Source: " + h.Path + "\n" + h.Manifest
	}
	return out, nil
}

// Deployed is r's release as the cluster has it: the chart version and
// Helm's status ("deployed", "failed", ...); "" and "not installed" when
// there is none.
func (c *Client) Deployed(r Release) (version, status string, err error) {
	rel, version, status, err := c.get(r)
	if rel == nil && err == nil {
		status = "not installed"
	}
	return version, status, err
}

// get is the release as Helm recorded it (nil: not installed), its chart's
// version ("" unknown) and its status ("unknown" when not recorded).
func (c *Client) get(r Release) (*release.Release, string, string, error) {
	cfg, err := c.action(r.Namespace)
	if err != nil {
		return nil, "", "", err
	}
	rel, err := action.NewGet(cfg).Run(r.Name)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		return nil, "", "", nil
	case err != nil:
		return nil, "", "", fmt.Errorf("release %s/%s: %w", r.Namespace, r.Name, err)
	}
	version, status := "", "unknown"
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		version = rel.Chart.Metadata.Version
	}
	if rel.Info != nil {
		status = rel.Info.Status.String()
	}
	return rel, version, status, nil
}
