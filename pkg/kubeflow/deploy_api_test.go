package kubeflow_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/test/cluster"
	"github.com/gpukit/gpukit/test/fixtures"
)

type event struct {
	Type, Phase, Host, Step, Message string
	Hosts                            *struct{ Changed, Unchanged, Failed int }
}

// deploy runs gpukit kubeflow deploy in-process with -o json.
func deploy(t *testing.T, args ...string) (int, []event, string) {
	t.Helper()
	start := time.Now()
	defer func() {
		mode := "deploy"
		if slices.Contains(args, "--dry-run") {
			mode = "dry-run"
		}
		t.Logf("gpukit kubeflow deploy (%s): %s", mode, time.Since(start).Round(time.Millisecond))
	}()
	var out, errb bytes.Buffer
	code := cli.Execute(context.Background(), append([]string{"kubeflow", "deploy", "-o", "json"}, args...),
		cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	var evs []event
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			evs = append(evs, e)
		}
	}
	return code, evs, out.String() + errb.String()
}

func lastHosts(evs []event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if h := evs[i].Hosts; h != nil {
			b, _ := json.Marshal(h)
			return string(b)
		}
	}
	return "no summary"
}

// `gpukit kubeflow deploy --kubeconfig` on a real API server with kwok
// nodes (pods are run by kwok: no image is pulled, no webhook server
// answers, so webhook admission is off): the plan writes nothing; storage,
// Traefik, kube-prometheus-stack and the DCGM exporter install from the
// real chart archives of the fixtures cache, the CRDs of Traefik
// and of the monitoring stack applied server-side by gpukit; Prometheus
// selects the exporter's ServiceMonitor and the statsd exporter's (both
// adding the cluster's name), the statsd exporter is Available behind its
// UDP/TCP Service, the dashboards' ConfigMaps are where Grafana's sidecar
// looks; Grafana's admin password is
// generated, written 0600 and never in the events, and so is Kubeflow's
// (Dex's hash of it replaces the release's well-known 12341234); Kubeflow v1.10.2 is
// applied completely; a second deploy changes nothing.
func TestKubeflowDeployOnARealAPIServer(t *testing.T) {
	cluster.Require(t)
	charts := fixtures.Dir(t, "charts")
	kf := fixtures.Dir(t, "kubeflow")
	t.Parallel()
	c := cluster.Start(t, cluster.Options{})
	c.AddNode(t, cluster.GPUNode{Name: "cp-1"})
	c.AddNode(t, cluster.GPUNode{Name: "gpu-1", GPUs: 8, Labels: map[string]string{"gpukit.dev/ingress": "true"}})
	c.AddNode(t, cluster.GPUNode{Name: "gpu-2", GPUs: 8})
	dir := t.TempDir()
	inv := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(inv, []byte(`apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: kf-test}
spec:
  orchestrator: kubernetes
  mirrors: {charts: "`+charts+`"}
  hosts:
    - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}
    - {name: gpu-1, address: 10.0.0.11, roles: [worker, ingress]}
    - {name: gpu-2, address: 10.0.0.12, roles: [worker]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(dir, "kf-test.credentials")
	args := []string{"-i", inv, "--kubeconfig", c.Kubeconfig, "--version", "v1.10.2",
		"--manifests", filepath.Join(kf, "manifests-v1.10.2.tar.gz"), "--credentials-out", creds, "--log-dir", filepath.Join(dir, "logs")}

	code, evs, out := deploy(t, append(args, "--dry-run")...)
	var planned []string
	for _, e := range evs {
		if e.Type == "planned" {
			planned = append(planned, e.Phase+": "+e.Step)
		}
	}
	want := []string{"platform/storage: install local-path-provisioner 0.0.37", "platform/ingress: install traefik 41.3.0",
		"platform/monitoring: generate Grafana's admin login", "platform/monitoring: install kube-prometheus-stack 88.5.3",
		"platform/gpu-metrics: install dcgm-exporter 4.8.2", "platform/training-metrics: install the statsd exporter",
		"platform/dashboards: provision the dashboards", "kubeflow/manifests: generate Kubeflow's login", "kubeflow/manifests: apply Kubeflow v1.10.2",
		"platform/routes: publish the routes"}
	if code != 0 || strings.Join(planned, "\n") != strings.Join(want, "\n") {
		t.Fatalf("dry-run: exit %d, planned\n%s\nwant\n%s\n%s", code, strings.Join(planned, "\n"), strings.Join(want, "\n"), tail(out))
	}
	if got, _ := c.TryKubectl("get", "namespaces", "-o", "name"); strings.Contains(got, "monitoring") || strings.Contains(got, "kubeflow") {
		t.Fatalf("the plan created namespaces:\n%s", got)
	}

	code, evs, out = deploy(t, args...)
	if code != 0 || lastHosts(evs) != `{"Changed":1,"Unchanged":0,"Failed":0}` {
		t.Fatalf("deploy: exit %d, %s\n%s", code, lastHosts(evs), tail(out))
	}
	// Grafana's password: in the 0600 file, in no event.
	st, err := os.Stat(creds)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file: %v %v", st, err)
	}
	b, _ := os.ReadFile(creds)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	logins := map[string][]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 5 && len(f[4]) == 32 {
			logins[f[0]] = f
		}
	}
	if len(lines) != 2 || logins["Grafana"] == nil || logins["Kubeflow"] == nil || logins["Kubeflow"][2] != "user@example.com" {
		t.Fatalf("credentials: %q", b)
	}
	pw, kfpw := logins["Grafana"][4], logins["Kubeflow"][4]
	for _, p := range []string{pw, kfpw} {
		if strings.Contains(out, p) {
			t.Error("a generated password is in the output")
		}
	}
	// Dex runs the generated password, not the release's 12341234.
	hash := c.Kubectl(t, "-n", "auth", "get", "secret", "dex-passwords", "-o", "jsonpath={.data.DEX_USER_PASSWORD}")
	h, _ := base64.StdEncoding.DecodeString(hash)
	if bcrypt.CompareHashAndPassword(h, []byte(kfpw)) != nil || bcrypt.CompareHashAndPassword(h, []byte("12341234")) == nil {
		t.Errorf("Dex's password hash %q is not the generated password's", h)
	}
	if got := c.Kubectl(t, "-n", "monitoring", "get", "secret", "gpukit-grafana-admin", "-o", "jsonpath={.data.admin-password}"); got == "" {
		t.Error("no Grafana admin secret")
	}
	filepath.Walk(filepath.Join(dir, "logs"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(pw)) || bytes.Contains(b, []byte(kfpw)) {
				t.Errorf("%s holds a generated password", p)
			}
		}
		return nil
	})

	// The default StorageClass; Traefik on the ingress host; its CRDs and
	// the monitoring stack's applied by gpukit, server-side.
	if got := c.Kubectl(t, "get", "storageclass", "local-path", "-o", `jsonpath={.metadata.annotations.storageclass\.kubernetes\.io/is-default-class}`); got != "true" {
		t.Errorf("local-path default: %q", got)
	}
	if got := c.Kubectl(t, "-n", "traefik", "get", "daemonset", "traefik", "-o", `jsonpath={.spec.template.spec.nodeSelector.gpukit\.dev/ingress} {.spec.template.spec.containers[0].ports[*].hostPort} {.status.numberReady}`); got != "true 80 443 1" {
		t.Errorf("traefik daemonset: %q", got)
	}
	if got := c.Kubectl(t, "get", "ingressclass", "traefik", "-o", `jsonpath={.metadata.annotations.ingressclass\.kubernetes\.io/is-default-class}`); got != "true" {
		t.Errorf("traefik ingress class default: %q", got)
	}
	for _, crd := range []string{"ingressroutes.traefik.io", "servicemonitors.monitoring.coreos.com", "prometheuses.monitoring.coreos.com"} {
		if got := c.Kubectl(t, "get", "crd", crd, "-o", `jsonpath={.metadata.managedFields[*].manager}`); !strings.Contains(got, "gpukit") {
			t.Errorf("CRD %s managed by %q, not gpukit", crd, got)
		}
	}
	// Prometheus selects the DCGM exporter's ServiceMonitor.
	var prom struct {
		Items []struct {
			Spec struct {
				ServiceMonitorSelector          struct{ MatchLabels map[string]string }
				ServiceMonitorNamespaceSelector *struct{}
			}
		}
	}
	if err := json.Unmarshal([]byte(c.Kubectl(t, "-n", "monitoring", "get", "prometheus", "-o", "json")), &prom); err != nil || len(prom.Items) != 1 {
		t.Fatalf("prometheus: %v %+v", err, prom)
	}
	sel := prom.Items[0].Spec.ServiceMonitorSelector.MatchLabels
	if len(sel) == 0 {
		t.Errorf("Prometheus selects every ServiceMonitor: %+v", prom.Items[0].Spec)
	}
	// ... and the statsd exporter's, which selects the exporter's
	// Service, whose endpoints are its Available pod's.
	for _, name := range []string{"dcgm-exporter", "statsd-exporter"} {
		var sm struct {
			Metadata struct{ Labels map[string]string }
			Spec     struct {
				Selector  struct{ MatchLabels map[string]string }
				Endpoints []struct {
					Relabelings []struct{ TargetLabel, Replacement string }
				}
			}
		}
		if err := json.Unmarshal([]byte(c.Kubectl(t, "-n", "monitoring", "get", "servicemonitor", name, "-o", "json")), &sm); err != nil {
			t.Fatal(err)
		}
		for k, v := range sel {
			if sm.Metadata.Labels[k] != v {
				t.Errorf("Prometheus selects %v; the ServiceMonitor %s has %v", sel, name, sm.Metadata.Labels)
			}
		}
		if len(sm.Spec.Endpoints) != 1 || !slices.ContainsFunc(sm.Spec.Endpoints[0].Relabelings, func(r struct{ TargetLabel, Replacement string }) bool {
			return r.TargetLabel == "cluster" && r.Replacement == "kf-test"
		}) {
			t.Errorf("ServiceMonitor %s does not add the cluster's name: %+v", name, sm.Spec)
		}
		if name == "statsd-exporter" {
			var svc struct {
				Metadata struct{ Labels map[string]string }
			}
			if err := json.Unmarshal([]byte(c.Kubectl(t, "-n", "monitoring", "get", "service", name, "-o", "json")), &svc); err != nil {
				t.Fatal(err)
			}
			for k, v := range sm.Spec.Selector.MatchLabels {
				if svc.Metadata.Labels[k] != v {
					t.Errorf("the statsd ServiceMonitor selects %v; the Service has %v", sm.Spec.Selector.MatchLabels, svc.Metadata.Labels)
				}
			}
		}
	}
	// The real prometheus-operator makes a scrape job of each, with
	// gpukit's relabelings, for the release's Prometheus.
	scrape := operatorScrapeConfig(t, c)
	for _, job := range []string{"serviceMonitor/monitoring/dcgm-exporter/0", "serviceMonitor/monitoring/statsd-exporter/0"} {
		i := strings.Index(scrape, "job_name: "+job+"\n")
		if i < 0 {
			t.Errorf("prometheus-operator made no job %s:\n%s", job, scrape)
			continue
		}
		j := scrape[i:]
		if k := strings.Index(j[1:], "- job_name: "); k >= 0 {
			j = j[:k+1]
		}
		if strings.Contains(job, "statsd") {
			t.Logf("prometheus-operator's job for gpukit's statsd ServiceMonitor:\n%s", j)
		}
		for _, want := range []string{"honor_labels: false", "target_label: cluster\n    replacement: kf-test", "- __meta_kubernetes_pod_node_name\n    target_label: node"} {
			if !strings.Contains(j, want) {
				t.Errorf("job %s lacks %q:\n%s", job, want, j)
			}
		}
	}
	if got := c.Kubectl(t, "-n", "monitoring", "get", "deployment", "statsd-exporter", "-o", `jsonpath={.status.availableReplicas} {.spec.template.spec.containers[0].image}`); got != "1 docker.io/prom/statsd-exporter:v0.31.0" {
		t.Errorf("statsd exporter: %q", got)
	}
	if got := c.Kubectl(t, "-n", "monitoring", "get", "service", "statsd-exporter", "-o", `jsonpath={range .spec.ports[*]}{.port}/{.protocol} {end}`); got != "9102/TCP 9125/UDP 9125/TCP" {
		t.Errorf("statsd service ports: %q", got)
	}
	// The dashboards, where Grafana's sidecar loads them from.
	if got := c.Kubectl(t, "-n", "monitoring", "get", "configmaps", "-l", "grafana_dashboard=1,app.kubernetes.io/managed-by=gpukit", "-o", "name"); got != "configmap/gpukit-gpus-dashboard\nconfigmap/gpukit-training-dashboard" {
		t.Errorf("gpukit's dashboards: %q", got)
	}
	if got := c.Kubectl(t, "-n", "monitoring", "get", "daemonset", "dcgm-exporter", "-o", `jsonpath={.spec.template.spec.nodeSelector.nvidia\.com/gpu\.present} {.status.desiredNumberScheduled}`); got != "true 2" {
		t.Errorf("dcgm-exporter daemonset: %q", got)
	}
	// Kubeflow: the user's profile by its real name, every webhook configuration.
	if got := c.Kubectl(t, "get", "profiles", "-o", "name"); got != "profile.kubeflow.org/kubeflow-user-example-com" {
		t.Errorf("profiles: %q", got)
	}
	if got := strings.Fields(c.Kubectl(t, "get", "validatingwebhookconfigurations,mutatingwebhookconfigurations", "-o", "name")); len(got) < 25 {
		t.Errorf("%d webhook configurations", len(got))
	}

	// The web UIs through Traefik, under the ingress host's nip.io domain,
	// with TLS from a self-signed certificate of that domain.
	if got := c.Kubectl(t, "get", "ingress", "-A", "-o", `jsonpath={range .items[*]}{.metadata.namespace}/{.spec.rules[0].host}>{.spec.rules[0].http.paths[0].backend.service.name} {end}`); got != "istio-system/kubeflow.10.0.0.11.nip.io>istio-ingressgateway istio-system/tensorboard.10.0.0.11.nip.io>istio-ingressgateway monitoring/grafana.10.0.0.11.nip.io>kube-prometheus-stack-grafana" {
		t.Errorf("ingresses: %q", got)
	}
	if got := c.Kubectl(t, "-n", "traefik", "get", "tlsstore", "default", "-o", "jsonpath={.spec.defaultCertificate.secretName}"); got != "gpukit-ingress-tls" {
		t.Errorf("TLS store: %q", got)
	}
	crt, _ := base64.StdEncoding.DecodeString(c.Kubectl(t, "-n", "traefik", "get", "secret", "gpukit-ingress-tls", "-o", `jsonpath={.data.tls\.crt}`))
	if blk, _ := pem.Decode(crt); blk == nil {
		t.Error("no certificate in gpukit-ingress-tls")
	} else if cert, err := x509.ParseCertificate(blk.Bytes); err != nil || cert.VerifyHostname("kubeflow.10.0.0.11.nip.io") != nil {
		t.Errorf("the certificate does not name kubeflow.10.0.0.11.nip.io: %v %v", err, cert.DNSNames)
	}

	// gpukit kubeflow status: every release at its pinned version; the
	// Deployments whose pods claim volumes wait for them (kwok runs no
	// provisioner: their claims stay Pending), every other is Available.
	// The apply waits for the webhooks' Deployments only, and they go
	// first: the others may still be rolling out when deploy returns, so
	// status is asked again, for a while, until only those waiting for
	// volumes are left.
	type kubeflowStatus struct {
		Type               string
		Releases           []struct{ Name, Want, Deployed, Status string }
		Kubeflow, Platform struct {
			Deployments, Available int
			NotAvailable           []string
		}
		URLs []string
	}
	claimsVolume := func(d string) bool {
		ns, name, _ := strings.Cut(d, "/")
		return c.Kubectl(t, "-n", ns, "get", "deployment", name, "-o", "jsonpath={.spec.template.spec.volumes[*].persistentVolumeClaim.claimName}") != ""
	}
	var ks kubeflowStatus
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(2 * time.Second) {
		var sout, serr bytes.Buffer
		code = cli.Execute(context.Background(), []string{"kubeflow", "status", "-o", "json", "-i", inv, "--kubeconfig", c.Kubeconfig, "--log-dir", filepath.Join(dir, "logs")},
			cli.Streams{In: strings.NewReader(""), Out: &sout, Err: &serr})
		lines = strings.Split(strings.TrimSpace(sout.String()), "\n")
		ks = kubeflowStatus{}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ks); err != nil || ks.Type != "kubeflow-status" {
			t.Fatalf("status: exit %d %v\n%s%s", code, err, sout.String(), serr.String())
		}
		if !slices.ContainsFunc(ks.Kubeflow.NotAvailable, func(d string) bool { return !claimsVolume(d) }) || time.Now().After(deadline) {
			break
		}
	}
	for _, r := range ks.Releases {
		if r.Status != "deployed" || r.Deployed != r.Want {
			t.Errorf("status: release %+v", r)
		}
	}
	if len(ks.Releases) != 4 || ks.Kubeflow.Deployments != 47 || ks.Platform.Deployments != 1 || ks.Platform.Available != 1 || len(ks.URLs) != 3 || ks.URLs[1] != "https://kubeflow.10.0.0.11.nip.io/" {
		t.Errorf("status: %+v", ks)
	}
	for _, d := range ks.Kubeflow.NotAvailable {
		if !claimsVolume(d) {
			t.Errorf("status: %s is not Available and claims no volume (2 minutes after deploy)", d)
		}
	}
	if want := 1; len(ks.Kubeflow.NotAvailable) > 0 && code != want || len(ks.Kubeflow.NotAvailable) == 0 && code != 0 {
		t.Errorf("status exit %d with %d not Available", code, len(ks.Kubeflow.NotAvailable))
	}
	t.Logf("status: %d of %d Kubeflow Deployments Available; waiting for volumes: %v", ks.Kubeflow.Available, ks.Kubeflow.Deployments, ks.Kubeflow.NotAvailable)

	code, evs, out = deploy(t, args...)
	if code != 0 || lastHosts(evs) != `{"Changed":0,"Unchanged":1,"Failed":0}` {
		t.Errorf("second deploy: exit %d, %s\n%s", code, lastHosts(evs), tail(out))
	}
	if _, err := os.Stat(creds); err != nil {
		t.Error(err)
	}
	if strings.Contains(out, pw) || strings.Contains(out, kfpw) {
		t.Error("the second run shows a password")
	}
}

func tail(s string) string {
	if len(s) > 6000 {
		return "..." + s[len(s)-6000:]
	}
	return s
}
