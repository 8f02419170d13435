package swarmplatform

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/dashboards"
	"github.com/gpukit/gpukit/pkg/imageref"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/swarmapi"
)

// The stacks, one per phase.
const (
	StackIngress    = "gpukit-ingress"
	StackMonitoring = "gpukit-monitoring"
	StackGPUMetrics = "gpukit-gpu-metrics"
	StackTraining   = "gpukit-training"
)

// Stacks are every stack gpukit may deploy, in deployment order.
var Stacks = []string{StackIngress, StackMonitoring, StackGPUMetrics, StackTraining}

// Files of the platform under Dir that gpukit reads back: the Grafana
// password (its digest only) and the kept ingress certificate.
const (
	passwordFile = StackMonitoring + "/grafana-admin"
	certFile     = StackIngress + "/ingress.crt"
	keyFile      = StackIngress + "/ingress.key"
)

// GrafanaUser is the Grafana admin's login; its password is generated.
const GrafanaUser = "admin"

// Site is what the platform is deployed for: the inventory's addons, the
// cluster's name (the metrics' cluster label, the dashboards' first
// variable) and the registry mirror the nodes pull through.
type Site struct {
	Cluster  string
	Addons   inventory.Addons
	Mirror   imageref.Mirror
	Mirrored bool
}

// SiteOf is the platform of the swarm gpukit built from inv.
func SiteOf(inv *inventory.Inventory) Site {
	m, ok := inv.RegistryMirror()
	return Site{Cluster: inv.Cluster.Metadata.Name, Addons: inv.Cluster.Spec.Addons, Mirror: m, Mirrored: ok}
}

func on(b *bool) bool { return b == nil || *b }

// image is the bill's image name, under the registry mirror's name where
// the site has one (Docker mirrors only Docker Hub).
func (s Site) image(name string) (string, error) {
	im := manifests.Bill().Image(name)
	if im.Ref == "" {
		return "", fmt.Errorf("the bill of materials has no image %s", name)
	}
	if !s.Mirrored {
		return im.Ref, nil
	}
	return s.Mirror.Of(im.Ref)
}

// grafanaHost is Grafana's name under the ingress domain ("" without the
// ingress).
func (s Site) grafanaHost() string {
	if !on(s.Addons.Ingress.Enabled) || s.Addons.Ingress.Domain == "" {
		return ""
	}
	return "grafana." + s.Addons.Ingress.Domain
}

func scrape(job string, port int) map[string]string {
	return map[string]string{LabelScrapeJob: job, LabelScrapePort: fmt.Sprint(port)}
}

// ingress is Traefik on every manager (its swarm provider reads the
// services from the manager's docker), on the node's ports 80 and 443,
// HTTP sent to HTTPS, the certificate (cert and key, PEM; keep: already
// on the manager) as the default of every route.
func (s Site) ingress(cert []byte, keep bool, key []byte) (Stack, error) {
	img, err := s.image("traefik")
	if err != nil {
		return Stack{}, err
	}
	dynamic, err := yaml.Marshal(map[string]any{"tls": map[string]any{"stores": map[string]any{"default": map[string]any{
		"defaultCertificate": map[string]any{"certFile": "/run/secrets/ingress.crt", "keyFile": "/run/secrets/ingress.key"}}}}})
	if err != nil {
		return Stack{}, err
	}
	// The key is named after its certificate: gpukit never reads a kept one.
	crt := File{Content: cert, Keep: keep}
	k := File{Content: key, Keep: keep, Sum: File{Content: append([]byte("the key of "), cert...)}.sum()}
	return Stack{
		Name: StackIngress,
		Services: []Service{{
			Name: "traefik", Image: img, Global: true, Constraints: []string{"node.role == manager"},
			Command: []string{
				"--entrypoints.web.address=:80", "--entrypoints.websecure.address=:443",
				"--entrypoints.web.http.redirections.entrypoint.to=websecure",
				"--entrypoints.web.http.redirections.entrypoint.scheme=https",
				"--entrypoints.web.http.redirections.entrypoint.permanent=true",
				"--entrypoints.websecure.http.tls=true",
				"--providers.swarm.endpoint=unix:///var/run/docker.sock",
				"--providers.swarm.exposedByDefault=false",
				"--providers.swarm.network=" + Network,
				"--providers.file.filename=/etc/traefik/dynamic.yml",
				"--ping=true",
			},
			Ports:   []Port{{Target: 80, Published: 80}, {Target: 443, Published: 443}},
			Volumes: []string{"/var/run/docker.sock:/var/run/docker.sock:ro"},
			Configs: []Mount{{Key: "dynamic.yml", Target: "/etc/traefik/dynamic.yml"}},
			Secrets: []Mount{{Key: "ingress.crt", Target: "ingress.crt"}, {Key: "ingress.key", Target: "ingress.key"}},
		}},
		Configs: map[string]File{"dynamic.yml": {Content: dynamic}},
		Secrets: map[string]File{"ingress.crt": crt, "ingress.key": k},
	}, nil
}

// monitoring is Prometheus and Grafana on the first manager (node, its
// swarm node ID: their data stay on its volumes), and node exporter on
// every node. Prometheus finds what to scrape through the manager's
// docker (its swarm service discovery): every running task of a service
// labelled with a scrape port, on the platform's network, its samples
// labelled as on Kubernetes (job, node, cluster, and the namespace and pod
// of the exporter's task, so that an exporter's own namespace and pod
// labels become exported_*: the dashboards' variables). password is
// Grafana's admin password (keep: the manager's, whose sha256 it is).
func (s Site) monitoring(node string, password []byte, keep bool) (Stack, error) {
	var imgs [3]string
	for i, n := range []string{"prometheus", "grafana", "node-exporter"} {
		var err error
		if imgs[i], err = s.image(n); err != nil {
			return Stack{}, err
		}
	}
	prom, err := s.prometheusConfig()
	if err != nil {
		return Stack{}, err
	}
	datasources, err := yaml.Marshal(map[string]any{"apiVersion": 1, "datasources": []any{map[string]any{
		"name": "Prometheus", "type": "prometheus", "uid": "prometheus", "access": "proxy", "url": "http://prometheus:9090", "isDefault": true}}})
	if err != nil {
		return Stack{}, err
	}
	const dashDir = "/etc/gpukit/dashboards"
	providers, err := yaml.Marshal(map[string]any{"apiVersion": 1, "providers": []any{map[string]any{
		"name": "gpukit", "folder": "gpukit", "type": "file", "disableDeletion": true, "options": map[string]any{"path": dashDir}}}})
	if err != nil {
		return Stack{}, err
	}
	configs := map[string]File{"prometheus.yml": {Content: prom}, "datasources.yml": {Content: datasources}, "dashboards.yml": {Content: providers}}
	grafanaConfigs := []Mount{
		{Key: "datasources.yml", Target: "/etc/grafana/provisioning/datasources/gpukit.yml"},
		{Key: "dashboards.yml", Target: "/etc/grafana/provisioning/dashboards/gpukit.yml"},
	}
	for _, d := range dashboards.All() {
		b, err := d.JSON()
		if err != nil {
			return Stack{}, err
		}
		key := d.UID + ".json"
		configs[key] = File{Content: b}
		grafanaConfigs = append(grafanaConfigs, Mount{Key: key, Target: dashDir + "/" + key})
	}
	pw := File{Content: password}
	if keep {
		pw = File{Keep: true, Sum: string(password)} // the manager's file's sha256
	}
	env := map[string]string{
		"GF_SECURITY_ADMIN_USER":           GrafanaUser,
		"GF_SECURITY_ADMIN_PASSWORD__FILE": "/run/secrets/grafana-admin",
		"GF_PATHS_PROVISIONING":            "/etc/grafana/provisioning",
	}
	var labels map[string]string
	if host := s.grafanaHost(); host != "" {
		env["GF_SERVER_ROOT_URL"] = "https://" + host
		labels = map[string]string{
			"traefik.enable":                                         "true",
			"traefik.http.routers.grafana.rule":                      "Host(`" + host + "`)",
			"traefik.http.routers.grafana.entrypoints":               "websecure",
			"traefik.http.routers.grafana.tls":                       "true",
			"traefik.http.services.grafana.loadbalancer.server.port": "3000",
		}
	}
	here := []string{"node.id == " + node}
	return Stack{
		Name: StackMonitoring,
		Services: []Service{
			{
				Name: "prometheus", Image: imgs[0], Constraints: here, User: "0:0", // the docker socket's (by number: a distroless image has no passwd)
				Command: []string{"--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus", "--storage.tsdb.retention.time=15d"},
				Volumes: []string{"prometheus-data:/prometheus", "/var/run/docker.sock:/var/run/docker.sock:ro"},
				Configs: []Mount{{Key: "prometheus.yml", Target: "/etc/prometheus/prometheus.yml"}},
			},
			{
				Name: "grafana", Image: imgs[1], Constraints: here, Env: env, Labels: labels,
				Volumes: []string{"grafana-data:/var/lib/grafana"},
				Configs: grafanaConfigs,
				Secrets: []Mount{{Key: "grafana-admin", Target: "grafana-admin"}},
			},
			{
				// The host's root read-only, without rslave: not every
				// host's / is a shared mount.
				Name: "node-exporter", Image: imgs[2], Global: true,
				Command: []string{"--path.rootfs=/host", "--web.listen-address=:9100"},
				Volumes: []string{"/:/host:ro"},
				Labels:  scrape("node-exporter", 9100),
			},
		},
		Configs: configs,
		Secrets: map[string]File{"grafana-admin": pw},
	}, nil
}

// prometheusConfig scrapes the platform's exporters, found through the
// manager's docker.
func (s Site) prometheusConfig() ([]byte, error) {
	meta := func(label string) string {
		return "__meta_dockerswarm_service_label_" + strings.NewReplacer(".", "_", "-", "_").Replace(label)
	}
	cfg := map[string]any{
		"global": map[string]any{"scrape_interval": "15s", "evaluation_interval": "15s"},
		"scrape_configs": []any{map[string]any{
			"job_name":               "gpukit",
			"dockerswarm_sd_configs": []any{map[string]any{"host": "unix:///var/run/docker.sock", "role": "tasks", "refresh_interval": "15s"}},
			"relabel_configs": []any{
				map[string]any{"source_labels": []string{"__meta_dockerswarm_task_desired_state"}, "regex": "running", "action": "keep"},
				map[string]any{"source_labels": []string{meta(LabelScrapePort)}, "regex": ".+", "action": "keep"},
				map[string]any{"source_labels": []string{"__meta_dockerswarm_network_name"}, "regex": Network, "action": "keep"},
				map[string]any{"source_labels": []string{"__address__", meta(LabelScrapePort)}, "regex": `([^:]+):\d+;(\d+)`, "replacement": "$1:$2", "target_label": "__address__"},
				map[string]any{"source_labels": []string{meta(LabelScrapeJob)}, "target_label": "job"},
				map[string]any{"source_labels": []string{"__meta_dockerswarm_node_hostname"}, "target_label": "node"},
				map[string]any{"target_label": "cluster", "replacement": s.Cluster},
				map[string]any{"source_labels": []string{meta("com.docker.stack.namespace")}, "target_label": "namespace"},
				map[string]any{"source_labels": []string{"__meta_dockerswarm_task_id"}, "target_label": "pod"},
			},
		}},
	}
	return yaml.Marshal(cfg)
}

// gpuMetrics is NVIDIA's DCGM exporter on every GPU node (the label
// swarm/labels gives them), with every GPU of the node (the NVIDIA
// runtime is their default; it reserves none of the swarm's GPUs).
func (s Site) gpuMetrics() (Stack, error) {
	img, err := s.image("dcgm-exporter")
	if err != nil {
		return Stack{}, err
	}
	return Stack{Name: StackGPUMetrics, Services: []Service{{
		Name: "dcgm-exporter", Image: img, Global: true,
		Constraints: []string{"node.labels." + swarmapi.LabelGPU + " == true"},
		Env:         map[string]string{"NVIDIA_VISIBLE_DEVICES": "all", "DCGM_EXPORTER_KUBERNETES": "false", "NODE_NAME": "{{.Node.Hostname}}"},
		Labels:      scrape("dcgm-exporter", 9400),
	}}}, nil
}

// training is the statsd exporter training jobs push their metrics to, at
// statsd-exporter:9125 (UDP or TCP) on the platform's network, with the
// arguments it runs with on Kubernetes.
func (s Site) training() (Stack, error) {
	img, err := s.image("statsd-exporter")
	if err != nil {
		return Stack{}, err
	}
	return Stack{Name: StackTraining, Services: []Service{{
		Name: "statsd-exporter", Image: img,
		Command: []string{"--statsd.listen-udp=:9125", "--statsd.listen-tcp=:9125", "--web.listen-address=:9102"},
		Labels:  scrape("statsd-exporter", 9102),
	}}}, nil
}

// stackDef is one of the platform's stacks: its phase and what it runs
// (the bill's image names).
type stackDef struct {
	phase, stack, title string
	images              []string
}

// stacks are those the site's addons enable, in deployment order: what
// the phases deploy, status expects and a mirror must hold.
func (s Site) stacks() []stackDef {
	a := s.Addons
	var out []stackDef
	if on(a.Ingress.Enabled) {
		out = append(out, stackDef{PhaseIngress, StackIngress, "Deploy Traefik on the managers' ports 80 and 443 with TLS", []string{"traefik"}})
	}
	if on(a.Monitoring.Enabled) {
		out = append(out, stackDef{PhaseMonitoring, StackMonitoring, "Deploy Prometheus, Grafana with gpukit's dashboards, and node exporter",
			[]string{"prometheus", "grafana", "node-exporter"}})
		if on(a.Monitoring.GPUMetrics.Enabled) {
			out = append(out, stackDef{PhaseGPUMetrics, StackGPUMetrics, "Deploy NVIDIA's DCGM exporter on the GPU nodes", []string{"dcgm-exporter"}})
		}
		out = append(out, stackDef{PhaseTrainingMetrics, StackTraining, "Deploy the statsd exporter for training metrics", []string{"statsd-exporter"}})
	}
	return out
}

// Images are the platform's images as the bill names them (not the
// mirror's names), each with the stack that runs it: what a registry
// mirror or an offline bundle must hold.
func (s Site) Images() [][2]string {
	var out [][2]string
	for _, d := range s.stacks() {
		for _, n := range d.images {
			out = append(out, [2]string{manifests.Bill().Image(n).Ref, d.stack})
		}
	}
	return out
}
