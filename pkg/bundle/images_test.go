package bundle

import (
	"slices"
	"testing"
)

func TestImagesIn(t *testing.T) {
	const manifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: op, labels: {app.kubernetes.io/part-of: knative.dev/net-istio}}
spec:
  template:
    spec:
      initContainers:
        - {name: init, image: busybox}
      containers:
        - name: op
          image: quay.io/prometheus-operator/prometheus-operator:v0.93.1
          args:
            - --prometheus-config-reloader=quay.io/prometheus-operator/prometheus-config-reloader:v0.93.1
            - --provisioner=cluster.local/local-path-provisioner
            - --log-level=info
          env:
            - {name: LAUNCHER, value: "ghcr.io/kubeflow/kfp-launcher:2.16.0"}
            - {name: IMAGE_DIGEST, value: "gcr.io/knative-releases/queue@sha256:40957d3ced3b185b7a78bbd771be69b0a13137dcbee5ff7f82ae738b56037d9c"}
            - {name: NAME, value: "sidecar.istio.io/status"}
        - {name: again, image: "quay.io/prometheus-operator/prometheus-operator:v0.93.1"}
        - {name: templated, image: "${IMAGE}"}
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: p}
spec: {image: "quay.io/prometheus/prometheus:v3.14.0-distroless@sha256:1111111111111111111111111111111111111111111111111111111111111111"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data:
  katib-config: |
    suggestions:
      - algorithmName: tpe
        image: ghcr.io/kubeflow/katib/suggestion-hyperopt:v0.19.0
  values: '{"global": {"hub": "gcr.io/istio-release", "tag": "1.28.0"}, "pilot": {"image": "pilot"}}'
  template: |
    {{- if .Values.grpc }}
    initContainers:
      - name: grpc-bootstrap-init
        image: busybox:1.28
        args: ["{{ .ProxyImage }}"]
    {{- end }}
`
	got, err := ImagesIn(manifest)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"docker.io/library/busybox:latest",
		"quay.io/prometheus-operator/prometheus-operator:v0.93.1",
		"quay.io/prometheus-operator/prometheus-config-reloader:v0.93.1",
		"ghcr.io/kubeflow/kfp-launcher:2.16.0",
		"gcr.io/knative-releases/queue@sha256:40957d3ced3b185b7a78bbd771be69b0a13137dcbee5ff7f82ae738b56037d9c",
		"quay.io/prometheus/prometheus:v3.14.0-distroless@sha256:1111111111111111111111111111111111111111111111111111111111111111",
		"ghcr.io/kubeflow/katib/suggestion-hyperopt:v0.19.0", // data keys in order
		"docker.io/library/busybox:1.28",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
