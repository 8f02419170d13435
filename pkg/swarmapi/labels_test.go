package swarmapi

import (
	"reflect"
	"testing"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
)

func TestNodeLabels(t *testing.T) {
	t.Parallel()
	h100 := facts.GPU{Name: "NVIDIA H100 80GB HBM3", MemMiB: 81559, Driver: "580.95.05", UUID: "GPU-a"}
	l40s := facts.GPU{Name: "NVIDIA L40S", MemMiB: 46068, Driver: "580.95.05", UUID: "GPU-b"}
	tests := []struct {
		name string
		m    inventory.Machine
		f    *facts.Facts
		want map[string]string
	}{
		{"no facts", inventory.Machine{}, nil, map[string]string{}},
		{"no GPU, inventory labels", inventory.Machine{Labels: map[string]string{"rack": "r1"}}, &facts.Facts{}, map[string]string{"rack": "r1"}},
		{"eight H100", inventory.Machine{}, &facts.Facts{GPUs: []facts.GPU{h100, h100, h100, h100, h100, h100, h100, h100}}, map[string]string{
			LabelGPU: "true", LabelGPUProduct: "NVIDIA H100 80GB HBM3", LabelGPUCount: "8", LabelGPUMemory: "81559", LabelDriver: "580.95.05", LabelCUDA: "13.0"}},
		{"mixed products, an inventory label wins", inventory.Machine{Labels: map[string]string{LabelGPUCount: "override"}},
			&facts.Facts{GPUs: []facts.GPU{h100, l40s}}, map[string]string{
				LabelGPU: "true", LabelGPUProduct: "NVIDIA H100 80GB HBM3,NVIDIA L40S", LabelGPUCount: "override", LabelGPUMemory: "81559", LabelDriver: "580.95.05", LabelCUDA: "13.0"}},
		{"old driver: its CUDA", inventory.Machine{}, &facts.Facts{GPUs: []facts.GPU{{Name: "A100", Driver: "535.261.03"}}}, map[string]string{
			LabelGPU: "true", LabelGPUProduct: "A100", LabelGPUCount: "1", LabelDriver: "535.261.03", LabelCUDA: "12.2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := NodeLabels(tt.m, tt.f); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestLabelOptions(t *testing.T) {
	t.Parallel()
	have := map[string]string{LabelGPUCount: "4", LabelDriver: "570.1", "gpukit.old": "x", "team": "ml"}
	want := map[string]string{LabelGPUCount: "8", LabelDriver: "570.1", "rack": "r1"}
	got := LabelOptions(have, want)
	exp := []string{"--label-add", LabelGPUCount + "=8", "--label-add", "rack=r1", "--label-rm", "gpukit.old"}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("got %q\nwant %q (the user's team label stays)", got, exp)
	}
	if got := LabelOptions(want, want); got != nil {
		t.Errorf("converged: %q", got)
	}
}
