package kubeadm_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/gpukit/gpukit/pkg/bootstrap/kubeadm"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/test/fixtures"
)

func cniInventory(t *testing.T, cni, hosts string) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Parse("t.yaml", []byte("apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: t}\nspec:\n  network: {cni: "+cni+"}\n  hosts:\n"+hosts))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// Multi-NIC hosts: the pod network runs over the node addresses, not the
// default route's interface; hosts with one address keep the CNI's choice.
func TestCNIOnNodeAddresses(t *testing.T) {
	fabric := "  - {name: cp-1, address: 10.0.0.10, nodeAddress: 10.10.0.10, roles: [control-plane]}\n" +
		`  - {name: "gpu-[1:2]", address: "10.0.0.[11:12]", nodeAddress: "10.10.0.[11:12]", roles: [worker]}` + "\n"
	plain := "  - {name: cp-1, address: 10.0.0.10, roles: [control-plane]}\n"
	for _, tt := range []struct {
		name, cni, hosts string
		want             any
		path             []string
	}{
		{"flannel", "flannel", fabric, []any{"--ip-masq", "--kube-subnet-mgr", "--iface=10.10.0.10", "--iface=10.10.0.11", "--iface=10.10.0.12"}, []string{"flannel", "args"}},
		{"flannel one NIC", "flannel", plain, nil, []string{"flannel", "args"}},
		{"calico", "calico", fabric, map[string]any{"kubernetes": "NodeInternalIP"}, []string{"installation", "calicoNetwork", "nodeAddressAutodetectionV4"}},
		{"calico one NIC", "calico", plain, nil, []string{"installation", "calicoNetwork", "nodeAddressAutodetectionV4"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rel, ok := kubeadm.CNIRelease(cniInventory(t, tt.cni, tt.hosts))
			if !ok {
				t.Fatal("no release")
			}
			var got any = rel.Values
			for _, k := range tt.path {
				m, _ := got.(map[string]any)
				got = m[k]
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%v = %#v, want %#v", tt.path, got, tt.want)
			}
		})
	}
}

// gpukit's flannel.args replace the chart's list (Helm merges no lists):
// they start with the pinned chart's own.
func TestFlannelArgsAreTheChartsOwn(t *testing.T) {
	dir := fixtures.Dir(t, "charts")
	matches, _ := filepath.Glob(filepath.Join(dir, "flannel-"+kubeadm.FlannelChart.Version+".tgz"))
	if len(matches) != 1 {
		t.Fatalf("no flannel %s archive in %s", kubeadm.FlannelChart.Version, dir)
	}
	f, err := os.Open(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ch, err := loader.LoadArchive(f)
	if err != nil {
		t.Fatal(err)
	}
	chartArgs := ch.Values["flannel"].(map[string]any)["args"]
	rel, _ := kubeadm.CNIRelease(cniInventory(t, "flannel", "  - {name: cp-1, address: 10.0.0.10, nodeAddress: 10.10.0.10, roles: [control-plane]}\n"))
	ours := rel.Values["flannel"].(map[string]any)["args"].([]any)
	if !reflect.DeepEqual(ours[:len(ours)-1], chartArgs) {
		t.Errorf("gpukit's flannel args %v do not start with the chart's %v", ours, chartArgs)
	}
}
