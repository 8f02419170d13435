package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
)

// Every golden kubeadm configuration gpukit renders (pkg/bootstrap/kubeadm/
// testdata: config/ from typed values, inventory/ from inventories) is accepted by the real `kubeadm config validate` of
// each Kubernetes version test/k8s builds (the document's kubernetesVersion
// set to that kubeadm's own: kubeadm refuses to deploy a newer minor).
func TestKubeadmValidatesTheGoldenConfigs(t *testing.T) {
	Require(t)
	_, file, _, _ := runtime.Caller(0)
	testdata := filepath.Join(filepath.Dir(file), "..", "..", "pkg", "bootstrap", "kubeadm", "testdata")
	goldens, err := filepath.Glob(filepath.Join(testdata, "config", "*.yaml"))
	fromInventory, err2 := filepath.Glob(filepath.Join(testdata, "inventory", "*", "*.yaml"))
	goldens = append(goldens, fromInventory...)
	if err != nil || err2 != nil || len(fromInventory) == 0 {
		t.Fatalf("no golden configurations found (%v)", err)
	}
	version := regexp.MustCompile(`(?m)^kubernetesVersion: .*$`)
	for _, v := range Versions(t) {
		t.Run(v, func(t *testing.T) {
			kubeadm := filepath.Join(BuildVersion(t, v), "kubeadm")
			for _, g := range goldens {
				b, err := os.ReadFile(g)
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(t.TempDir(), filepath.Base(g))
				if err := os.WriteFile(p, version.ReplaceAll(b, []byte("kubernetesVersion: "+v)), 0o600); err != nil {
					t.Fatal(err)
				}
				if out, err := exec.Command(kubeadm, "config", "validate", "--config", p).CombinedOutput(); err != nil {
					t.Errorf("kubeadm %s config validate %s: %v\n%s", v, g[len(testdata)+1:], err, out)
				}
			}
		})
	}
}
