package kube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/test/cluster"
)

// With webhook admission on, a webhook whose backend does not answer (its
// pods are kwok's: Running and Ready, no server behind them) blocks the
// objects it matches: Apply waits for it a bounded time, then names the
// webhook, its configuration and service and every object it blocked,
// and applies the rest. It never loops.
func TestApplyNamesTheWebhookThatBlocks(t *testing.T) {
	cluster.Require(t)
	t.Parallel()
	c := cluster.Start(t, cluster.Options{Webhooks: true})
	c.AddNode(t, cluster.GPUNode{Name: "node-1"})
	c.Apply(t, `apiVersion: v1
kind: Namespace
metadata: {name: hooks}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: guard, namespace: hooks}
spec:
  selector: {matchLabels: {app: guard}}
  template:
    metadata: {labels: {app: guard}}
    spec: {containers: [{name: guard, image: registry.invalid/guard:1}]}
---
apiVersion: v1
kind: Service
metadata: {name: guard, namespace: hooks}
spec: {selector: {app: guard}, ports: [{port: 443, targetPort: 9443}]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: guard}
webhooks:
- name: guard.hooks.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 2
  clientConfig: {service: {namespace: hooks, name: guard, port: 443}}
  namespaceSelector: {matchLabels: {guarded: "yes"}}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}]
`)
	objs, err := kio.FromBytes([]byte(`apiVersion: v1
kind: Namespace
metadata: {name: guarded, labels: {guarded: "yes"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: guarded}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: guarded}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: free, namespace: default}
data: {k: v}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.RESTConfig(t)
	// The bound is the test's: Apply must return well before it.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := kube.Apply(ctx, cfg, objs, kube.ApplyOptions{Timeout: 15 * time.Second, Logf: t.Logf})
	t.Logf("Apply returned after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if ctx.Err() != nil {
		t.Fatal("Apply did not return within the test's bound")
	}
	for _, want := range []string{
		"2 object(s) failed",
		"webhook guard.hooks.example.com (ValidatingWebhookConfiguration guard, service hooks/guard) did not answer within 15s " +
			"(its Deployment is Available: the server itself does not answer): it blocks 2 object(s): ConfigMap guarded/a, ConfigMap guarded/b",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant %q", err, want)
		}
	}
	if res.Created != 2 {
		t.Errorf("created %d (the namespace and the unguarded configmap), want 2: %+v", res.Created, res)
	}
	if got := c.Kubectl(t, "get", "configmap", "free", "-o", "name"); got != "configmap/free" {
		t.Errorf("the unguarded configmap: %q", got)
	}
}
