package dcgm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpukit/gpukit/test/fixtures"
)

func critical(xid int) bool { return slices.Contains([]int{48, 79, 94, 95}, xid) }

func parseFixture(t *testing.T, name string) []GPU {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtures.Dir(t, "dcgm"), name))
	if err != nil {
		t.Skipf("fixture %s: %v", name, err)
	}
	defer f.Close()
	gpus, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return gpus
}

// Real scrapes: eight H100s of a GPU Operator node, one serving a vLLM pod
// (no HELP or TYPE lines); an A100 with a MIG instance, its series after a
// blank line.
func TestParseRealScrapes(t *testing.T) {
	t.Parallel()
	h100 := parseFixture(t, "h100-80gb-hbm3-x8__k8s-pod-labels__sampled.prom")
	if len(h100) != 8 {
		t.Fatalf("%d GPUs: %+v", len(h100), h100)
	}
	g := h100[0]
	if g.Index != "0" || g.UUID != "GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005" || g.Model != "NVIDIA H100 80GB HBM3" || g.Driver != "580.105.08" ||
		g.Hostname != "gpu-node-1" || !slices.Equal(g.Pods, []string{"dynamo-workload/vllm-agg-0-vllmdecodeworker-s65j5"}) {
		t.Errorf("GPU 0: %+v", g)
	}
	if v, ok := g.Value(FieldPower); !ok || v != 113.611 {
		t.Errorf("GPU 0 power %v %v", v, ok)
	}
	if v, _ := h100[7].Value(FieldTemp); h100[7].Index != "7" || v != 26 || len(h100[7].Pods) != 0 {
		t.Errorf("GPU 7: %+v", h100[7])
	}
	for _, g := range h100 {
		if f, w := g.Health(critical); len(f)+len(w) != 0 {
			t.Errorf("GPU %s of a healthy scrape: %v %v", g.Index, f, w)
		}
	}

	a100 := parseFixture(t, "a100-sxm4-40gb-mig__dcgm-exporter-2.x.prom")
	if len(a100) != 2 || a100[0].MIG != "" || a100[1].MIG != "1g.5gb #13" || a100[0].UUID != a100[1].UUID {
		t.Fatalf("the A100 and its MIG instance: %+v", a100)
	}
	if v, _ := a100[0].Value("DCGM_FI_DEV_FB_USED"); v != 4845 {
		t.Errorf("FB used %v", v)
	}
	if _, ok := a100[1].Value(FieldTemp); ok || len(a100[1].Fields) != 4 {
		t.Errorf("the MIG instance's fields: %v", a100[1].Fields)
	}
}

// The readings' verdicts: a critical XID fails the GPU, another one warns;
// a failed row remap and volatile double-bit errors fail it.
func TestHealth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fields      map[string]float64
		fails, warn string
	}{
		{fields: map[string]float64{FieldXID: 0, FieldTemp: 40}},
		{fields: map[string]float64{FieldXID: 79}, fails: "last XID 79"},
		{fields: map[string]float64{FieldXID: 13}, warn: "last XID 13"},
		{fields: map[string]float64{FieldRemapFailure: 1}, fails: "row remapping failed"},
		{fields: map[string]float64{FieldRemappedUncorr: 3}, warn: "3 rows remapped"},
		{fields: map[string]float64{FieldECCDBEVolatile: 2}, fails: "2 double-bit ECC"},
	} {
		f, w := GPU{Fields: tc.fields}.Health(critical)
		if strings.Join(f, "|") == "" != (tc.fails == "") || !strings.Contains(strings.Join(f, "|"), tc.fails) ||
			strings.Join(w, "|") == "" != (tc.warn == "") || !strings.Contains(strings.Join(w, "|"), tc.warn) {
			t.Errorf("%v: fails %q warns %q", tc.fields, f, w)
		}
	}
}

// Other exporters' metrics are left out, the exporter's label variants read
// and a broken scrape refused.
func TestParseOther(t *testing.T) {
	t.Parallel()
	gpus, err := Parse(strings.NewReader("# TYPE go_goroutines gauge\ngo_goroutines 12\nDCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 31\n"))
	if err != nil || len(gpus) != 1 || gpus[0].Index != "0" || gpus[0].UUID != "" {
		t.Errorf("%+v %v", gpus, err)
	}
	// a GPU shared by time-slicing: a sample per pod; the old label names
	// (--kubernetes-use-old-namespace); an OpenMetrics end
	gpus, err = Parse(strings.NewReader(`DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",pod="p1",namespace="n"} 30
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",pod="p2",namespace="n"} 30
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",pod_name="old",pod_namespace="ns",container_name="c"} 5
# EOF
`))
	if err != nil || len(gpus) != 2 || !slices.Equal(gpus[0].Pods, []string{"n/p1", "n/p2"}) || !slices.Equal(gpus[1].Pods, []string{"ns/old"}) {
		t.Errorf("%+v %v", gpus, err)
	}
	if _, err := Parse(strings.NewReader("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\" 31\n")); err == nil {
		t.Error("a broken scrape parsed")
	}
}

// Only a trusted DaemonSet's pods in its own namespace are read.
func TestTrusted(t *testing.T) {
	ds := func(name string) []metav1.OwnerReference {
		yes := true
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: name, Controller: &yes}}
	}
	sources := append([]Source{{Namespace: "monitoring", DaemonSet: "dcgm-exporter"}}, OperatorSources...)
	tests := []struct {
		name      string
		namespace string
		owners    []metav1.OwnerReference
		want      string // "" trusted, else the reason given
	}{
		{"gpukit's", "monitoring", ds("dcgm-exporter"), ""},
		{"the GPU Operator's", "gpu-operator", ds("nvidia-dcgm-exporter"), ""},
		{"the GPU Operator's on OpenShift", "nvidia-gpu-operator", ds("nvidia-dcgm-exporter"), ""},
		{"a bare pod with the label", "gpu-operator", nil, "no DaemonSet owns it"},
		{"a tenant's DaemonSet of the same name", "tenant", ds("nvidia-dcgm-exporter"), "DaemonSet tenant/nvidia-dcgm-exporter is not a trusted exporter"},
		{"another DaemonSet in a trusted namespace", "monitoring", ds("node-exporter"), "DaemonSet monitoring/node-exporter is not a trusted exporter"},
		{"owned, not controlled", "monitoring", []metav1.OwnerReference{{Kind: "DaemonSet", Name: "dcgm-exporter"}}, "no DaemonSet owns it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: tt.namespace, OwnerReferences: tt.owners}}
			ok, why := trusted(sources, pod)
			if ok != (tt.want == "") || why != tt.want {
				t.Errorf("trusted = %v %q, want %q", ok, why, tt.want)
			}
		})
	}
}
