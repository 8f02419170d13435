package kube

import (
	"reflect"
	"testing"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
)

func TestNodeLabels(t *testing.T) {
	h100 := facts.GPU{Name: "NVIDIA H100 80GB HBM3", MemMiB: 81559, Driver: "590.48.01"}
	tests := []struct {
		name string
		m    inventory.Machine
		f    *facts.Facts
		want map[string]string
	}{
		{name: "no GPUs, no labels", m: inventory.Machine{Name: "cp"}, f: &facts.Facts{}, want: map[string]string{}},
		{name: "facts not read", m: inventory.Machine{Name: "cp", Labels: map[string]string{"zone": "a"}}, want: map[string]string{"zone": "a"}},
		{
			name: "H100s, the product made label-safe",
			m:    inventory.Machine{Name: "g", Labels: map[string]string{"team": "vision"}},
			f:    &facts.Facts{GPUs: []facts.GPU{h100, h100}},
			want: map[string]string{LabelGPUProduct: "NVIDIA-H100-80GB-HBM3", LabelGPUCount: "2", LabelGPUMemory: "81559",
				LabelDriver: "590.48.01", LabelCUDA: "13.1", LabelGPUPresent: "true", "team": "vision"},
		},
		{
			name: "mixed products joined, an unknown driver without CUDA, the inventory's label wins",
			m:    inventory.Machine{Name: "g", Labels: map[string]string{LabelGPUCount: "one"}},
			f:    &facts.Facts{GPUs: []facts.GPU{{Name: "Tesla T4", Driver: "bogus"}, {Name: "NVIDIA A100-SXM4-40GB (MIG)", Driver: "bogus"}}},
			want: map[string]string{LabelGPUProduct: "Tesla-T4_NVIDIA-A100-SXM4-40GB--MIG", LabelGPUCount: "one", LabelDriver: "bogus", LabelGPUPresent: "true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NodeLabels(tt.m, tt.f); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestLabelValue(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA GeForce RTX 4080 SUPER": "NVIDIA-GeForce-RTX-4080-SUPER",
		"(weird)/name ":                 "weird--name",
		"x" + string(make([]byte, 70)):  "x",
		"":                              "",
	} {
		if got := labelValue(in); got != want || len(got) > 63 {
			t.Errorf("labelValue(%q) = %q, want %q", in, got, want)
		}
	}
}
