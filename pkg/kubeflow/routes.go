package kubeflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/pki"
)

// PhaseRoutes publishes the platform's web UIs through Traefik.
const PhaseRoutes = "platform/routes"

// TLSSecret is the ingress certificate: Traefik's default certificate (its
// TLSStore "default"), so every route's TLS uses it.
const TLSSecret = "gpukit-ingress-tls"

// Route is one web UI on a host name under the ingress domain.
type Route struct {
	Host, Namespace, Service string
	Port                     int
}

// Routes are the web UIs of what the site deploys: Grafana with the
// monitoring stack; Kubeflow's dashboard and its TensorBoards through
// Kubeflow's Istio gateway (the web apps are behind its authentication;
// they need HTTPS: their cookies are Secure).
func (s Site) Routes(kubeflow bool) []Route {
	d := s.Addons.Ingress.Domain
	if !on(s.Addons.Ingress.Enabled) || d == "" {
		return nil
	}
	var out []Route
	if on(s.Addons.Monitoring.Enabled) {
		out = append(out, Route{"grafana." + d, MonitoringNamespace, GrafanaService, 80})
	}
	if kubeflow {
		out = append(out, Route{"kubeflow." + d, "istio-system", "istio-ingressgateway", 80},
			Route{"tensorboard." + d, "istio-system", "istio-ingressgateway", 80})
	}
	return out
}

// RouteObjects are the Ingress of each route (Traefik's, TLS on the
// websecure entry point) and Traefik's default TLS store naming the
// certificate; the certificate's Secret is made apart (it is kept).
func RouteObjects(routes []Route) ([]*yaml.RNode, error) {
	if len(routes) == 0 {
		return nil, nil
	}
	docs := []any{map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "TLSStore",
		"metadata": map[string]any{"name": "default", "namespace": IngressNamespace},
		"spec":     map[string]any{"defaultCertificate": map[string]any{"secretName": TLSSecret}},
	}}
	for _, r := range routes {
		docs = append(docs, map[string]any{
			"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
			"metadata": map[string]any{"name": "gpukit-" + strings.SplitN(r.Host, ".", 2)[0], "namespace": r.Namespace,
				"annotations": map[string]any{"traefik.ingress.kubernetes.io/router.entrypoints": "websecure", "traefik.ingress.kubernetes.io/router.tls": "true"}},
			"spec": map[string]any{
				"ingressClassName": "traefik",
				"tls":              []any{map[string]any{"hosts": []any{r.Host}}},
				"rules": []any{map[string]any{"host": r.Host, "http": map[string]any{"paths": []any{map[string]any{
					"path": "/", "pathType": "Prefix",
					"backend": map[string]any{"service": map[string]any{"name": r.Service, "port": map[string]any{"number": r.Port}}},
				}}}}},
			},
		})
	}
	return nodes(docs...)
}

// routesPhase applies the routes and the certificate: a self-signed one
// made once (kept while it names the domain and stays valid a month), or
// the operator's own, put in the same Secret without gpukit's
// managed-by label: it is then left alone.
func (p *Platform) routesPhase(routes []Route) *objectsPhase {
	o := &objectsPhase{p: p, id: PhaseRoutes, title: "Publish Grafana and Kubeflow through Traefik with TLS",
		action: "publish the routes", enabled: len(routes) > 0}
	o.render = func(ctx context.Context, h *engine.Host) (rendered, error) {
		objs, err := RouteObjects(routes)
		if err != nil {
			return rendered{}, err
		}
		hosts := make([]string, len(routes))
		for i, rt := range routes {
			hosts[i] = "https://" + rt.Host
		}
		r := rendered{objs: objs, check: objs, what: fmt.Sprintf("routes %v", hosts)}
		sec, fresh, err := p.certificateSecret(ctx, h)
		if err != nil {
			return rendered{}, err
		}
		if sec != nil {
			// A kept certificate is applied again only with the routes.
			r.objs = append([]*yaml.RNode{sec}, objs...)
		}
		if fresh {
			r.fresh = "a new self-signed certificate for *." + p.site.Addons.Ingress.Domain
		}
		return r, nil
	}
	return o
}

// certificateSecret is the certificate's Secret as applied: the cluster's
// while it covers the domain, else a new one (fresh); nil when it is the
// operator's own.
func (p *Platform) certificateSecret(ctx context.Context, h *engine.Host) (*yaml.RNode, bool, error) {
	domain := p.site.Addons.Ingress.Domain
	var cert, key []byte
	fresh := true
	if cs, err := p.clientset(ctx, h); err != nil {
		return nil, false, err
	} else if cs != nil {
		s, err := cs.CoreV1().Secrets(IngressNamespace).Get(ctx, TLSSecret, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, false, err
		case !madeByGpukit(s.Labels):
			return nil, false, nil // the operator's own certificate
		case pki.CoversDomain(s.Data["tls.crt"], domain, time.Now()):
			cert, key, fresh = s.Data["tls.crt"], s.Data["tls.key"], false
		}
	}
	if fresh {
		var err error
		if cert, key, err = pki.IngressCertificate(domain, time.Now()); err != nil {
			return nil, false, err
		}
	}
	n, err := nodes(map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
		"metadata": map[string]any{"name": TLSSecret, "namespace": IngressNamespace, "labels": managedBy},
		"data":     map[string]any{"tls.crt": cert, "tls.key": key},
	})
	if err != nil {
		return nil, false, err
	}
	return n[0], fresh, nil
}
