package inventory

import (
	"fmt"
	"testing"
)

// inventory200 is a 200-GPU-host cluster written with one range, as an
// operator of a large site would.
const inventory200 = `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata:
  name: big
spec:
  ssh:
    user: ubuntu
    keyFile: ~/.ssh/id_ed25519
  hosts:
    - name: cp-[1:3]
      address: 10.0.0.[1:3]
      roles: [control-plane]
    - name: gpu-[001:200]
      address: 10.0.1.[1:200]
      roles: [worker]
      labels:
        nvidia.com/gpu.product: H200
      taints: ["nvidia.com/gpu=present:NoSchedule"]
  kubernetes:
    controlPlaneEndpoint: 10.0.0.10:6443
`

func TestLoad200Hosts(t *testing.T) {
	t.Parallel()
	inv := mustParse(t, inventory200)
	if len(inv.Warnings) != 0 {
		t.Errorf("warnings: %v", inv.Warnings)
	}
	if len(inv.Machines) != 203 {
		t.Fatalf("%d machines, want 3 control planes + 200 workers", len(inv.Machines))
	}
	gpus := inv.Machines[3:]
	for i, m := range gpus {
		wantName := fmt.Sprintf("gpu-%03d", i+1)
		wantAddr := fmt.Sprintf("10.0.1.%d", i+1)
		if m.Name != wantName || m.Address != wantAddr {
			t.Errorf("machine %d = %s/%s, want %s/%s", i, m.Name, m.Address, wantName, wantAddr)
		}
		if !m.HasRole(RoleWorker) || m.HasRole(RoleControlPlane) {
			t.Errorf("%s roles = %v", m.Name, m.Roles)
		}
		if m.Labels["nvidia.com/gpu.product"] != "H200" || len(m.Taints) != 1 {
			t.Errorf("%s labels/taints = %v %v", m.Name, m.Labels, m.Taints)
		}
		if m.Access.User != "ubuntu" || m.Access.Port != 22 || !m.Access.Sudo {
			t.Errorf("%s ssh = %+v", m.Name, m.Access)
		}
		if m.Pos.Line != 13 {
			t.Errorf("%s at line %d, want the range entry's line 13", m.Name, m.Pos.Line)
		}
	}
}

func BenchmarkLoad200(b *testing.B) {
	data := []byte(inventory200)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		inv, err := Parse("big.yaml", data)
		if err != nil || len(inv.Machines) != 203 {
			b.Fatalf("Parse: %v", err)
		}
	}
}
