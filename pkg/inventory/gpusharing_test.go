package inventory

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// The device plugin's configuration files, written with its own types: a
// cluster with MIG layouts gets mixed by default; time-slicing and MPS per
// node group (the label the hosts carry); none at all without MIG or
// sharing.
func TestDevicePluginConfigs(t *testing.T) {
	const hosts = `
    - {name: cp-1, address: 10.0.0.1, roles: [control-plane]}
    - {name: gpu-1, address: 10.0.0.11, roles: [worker], labels: {nvidia.com/device-plugin.config: notebooks}}
    - {name: gpu-2, address: 10.0.0.12, roles: [worker], mig: all-1g.10gb}`
	doc := "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: t}\nspec:\n  hosts:" + hosts + `
  kubernetes:
    gpuSharing:
      configs:
        notebooks: {migStrategy: none, timeSlicing: {replicas: 4, renameByDefault: true}}
        inference: {mps: {replicas: 2, resources: [nvidia.com/mig-1g.10gb]}}
`
	inv, err := Parse("t.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if s := inv.Cluster.MIGStrategy(); s != "mixed" {
		t.Errorf("MIG strategy %q, want mixed (a host has a MIG layout)", s)
	}
	files, def, err := inv.Cluster.DevicePluginConfigs()
	if err != nil {
		t.Fatal(err)
	}
	if def != DefaultSharingConfig || !slices.Equal(slices.Sorted(maps.Keys(files)), []string{"default", "inference", "notebooks"}) {
		t.Fatalf("configs %v, default %q", slices.Sorted(maps.Keys(files)), def)
	}
	var all strings.Builder
	for _, name := range slices.Sorted(maps.Keys(files)) {
		all.WriteString("# " + name + "\n" + files[name])
	}
	compareGolden(t, "testdata/gpusharing.golden", all.String())

	plain, err := Parse("t.yaml", []byte("apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: t}\nspec:\n  hosts:\n    - {name: cp-1, address: 10.0.0.1, roles: [control-plane, worker]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if files, _, err := plain.Cluster.DevicePluginConfigs(); files != nil || err != nil {
		t.Errorf("a cluster without MIG or sharing: %v %v", files, err)
	}
}
