package kubeflow

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/kube"
	"github.com/gpukit/gpukit/test/cluster"
	"github.com/gpukit/gpukit/test/fixtures"
)

// Kubeflow 26.03's example, its remote bases from the bundle of
// the fixtures cache (kubeflow/remote-bases), applied to a real API server
// with kwok nodes in one pass, no retry loop: every object created, every
// CRD Established before its custom resources, the webhooks' backends
// right after the namespaces, the webhook configurations last, after
// their backend Deployments are Available (kwok runs their
// pods: no image is pulled, no webhook server answers, so the control
// plane runs with webhook admission off); a second apply changes no
// object. (v1.10.2 goes through gpukit kubeflow deploy: deploy_api_test.go.)
func TestApplyKubeflowOnARealAPIServer(t *testing.T) {
	cluster.Require(t)
	dir := fixtures.Dir(t, "kubeflow")
	t.Parallel()
	objs, err := Manifests{Version: "26.03", Source: filepath.Join(dir, "manifests-26.03.tar.gz"),
		RemoteBases: filepath.Join(dir, "remote-bases", "kubeflow-26.03-remote-bases.tar.gz")}.Load(context.Background(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	c := cluster.Start(t, cluster.Options{})
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		c.AddNode(t, cluster.GPUNode{Name: n})
	}
	cfg := c.RESTConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := kube.Apply(ctx, cfg, objs, kube.ApplyOptions{Timeout: 4 * time.Minute, Logf: t.Logf})
	if err != nil {
		t.Fatalf("apply: %v (%+v)", err, res)
	}
	t.Logf("first apply of %d objects: %s, %+v", len(objs), time.Since(start).Round(time.Millisecond), res)
	if res.Created != len(objs) || !reflect.DeepEqual(res.Order, []string{"namespaces", "webhook backends", "CRDs", "objects", "custom resources", "webhook configurations"}) {
		t.Errorf("first apply: %+v", res)
	}
	start = time.Now()
	res, err = kube.Apply(ctx, cfg, objs, kube.ApplyOptions{Timeout: time.Minute})
	if err != nil || res.Unchanged != len(objs) || res.Created+res.Changed != 0 {
		t.Errorf("second apply: %+v %v", res, err)
	}
	t.Logf("second apply: %s", time.Since(start).Round(time.Millisecond))
}
