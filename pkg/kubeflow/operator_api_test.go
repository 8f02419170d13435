package kubeflow_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpukit/gpukit/pkg/kubeflow"
	"github.com/gpukit/gpukit/test/cluster"
)

// operatorScrapeConfig runs the real prometheus-operator (kube-prometheus-
// stack 88.5.3's appVersion, built from its module by test/k8s/build.sh
// platform) against c, from this machine with the admin kubeconfig's client
// certificate, until it has written the monitoring release's Prometheus
// configuration; it returns that configuration (the Secret
// prometheus-<name>'s prometheus.yaml.gz, unpacked).
func operatorScrapeConfig(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	cfg := c.RESTConfig(t)
	dir := t.TempDir()
	files := map[string][]byte{"ca.crt": cfg.CAData, "client.crt": cfg.CertData, "client.key": cfg.KeyData}
	for name, data := range files {
		if len(data) == 0 {
			t.Fatalf("the admin kubeconfig has no %s data", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var log strings.Builder
	start(t, &log, filepath.Join(cluster.Build(t, "platform"), "prometheus-operator"),
		"--apiserver="+cfg.Host, "--ca-file="+filepath.Join(dir, "ca.crt"),
		"--cert-file="+filepath.Join(dir, "client.crt"), "--key-file="+filepath.Join(dir, "client.key"),
		"--namespaces="+kubeflow.MonitoringNamespace, "--kubelet-service=", "--web.listen-address=127.0.0.1:"+freePort(t))
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	name := "prometheus-" + kubeflow.MonitoringRelease + "-prometheus"
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(time.Second) {
		s, err := cs.CoreV1().Secrets(kubeflow.MonitoringNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && len(s.Data["prometheus.yaml.gz"]) > 0 {
			zr, err := gzip.NewReader(bytes.NewReader(s.Data["prometheus.yaml.gz"]))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "serviceMonitor/") {
				return string(b)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus-operator wrote no configuration with ServiceMonitor jobs into %s/%s (%v):\n%s", kubeflow.MonitoringNamespace, name, err, tailOf(log.String()))
		}
	}
}
