package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/inventory"
)

// The inventory a site writes loads, and its hosts trust the site's test key
// for the Kubernetes and Docker mirrors, beside the GPU simulator's key for
// NVIDIA's (written first, by test/gpusim, as the lab tests do).
func TestWriteInventory(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "gpusim.yaml")
	const nvidiaKey = "1111111111111111111111111111111111111111"
	const labKey = "2222222222222222222222222222222222222222"
	if err := os.WriteFile(src, []byte(`apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata:
  name: lab
spec:
  ssh: {user: deploy}
  mirrors:
    nvidia: http://10.251.0.1:8080/gpusim/abc/  # stand-in repositories
    signingKeys: {nvidia: [`+nvidiaKey+`]}  # their TEST key
    kubernetes: http://10.251.0.1:8080/
    docker: http://10.251.0.1:8080/
  hosts:
    - {name: lab-1, address: 10.251.0.11, roles: [control-plane]}
    - {name: lab-2, address: 10.251.0.12, roles: [worker]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := Site{Version: "1.37.2", ContainerdVersion: "2.4.2", Registry: "http://10.251.0.1:5000/mirror",
		Packages: Packages{URL: "http://10.251.0.1:8080/kubernetes/def/", KeyFingerprint: labKey}}
	dst := filepath.Join(dir, "site.yaml")
	if err := s.WriteInventory(src, dst, LabKubernetes); err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Load(dst)
	if err != nil {
		b, _ := os.ReadFile(dst)
		t.Fatalf("%v\n%s", err, b)
	}
	m := inv.Cluster.Spec.Mirrors
	for _, tc := range []struct{ repo, want string }{
		{manifests.RepoCUDA, nvidiaKey}, {manifests.RepoContainerToolkit, nvidiaKey},
		{manifests.RepoKubernetes, labKey}, {manifests.RepoDocker, labKey},
	} {
		if got := m.SigningKey(tc.repo, "apt").Fingerprints; !slices.Equal(got, []string{tc.want}) {
			t.Errorf("%s: trusts %v, want %s", tc.repo, got, tc.want)
		}
	}
}
