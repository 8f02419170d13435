// Package dcgm reads what NVIDIA's dcgm-exporter serves (its /metrics, in
// Prometheus' text format): one reading per GPU and per MIG instance, with
// the pods it saw using each, and what those readings say about the GPU's
// health. gpukit status adds them to nvidia-smi's view when the monitoring
// stack runs.
package dcgm

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Fields gpukit reads (dcgm-exporter's default counters name them so).
const (
	FieldTemp           = "DCGM_FI_DEV_GPU_TEMP"
	FieldPower          = "DCGM_FI_DEV_POWER_USAGE"
	FieldUtil           = "DCGM_FI_DEV_GPU_UTIL"
	FieldFBUsed         = "DCGM_FI_DEV_FB_USED"
	FieldFBFree         = "DCGM_FI_DEV_FB_FREE"
	FieldXID            = "DCGM_FI_DEV_XID_ERRORS"
	FieldRemapFailure   = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
	FieldRemappedUncorr = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
	FieldECCDBEVolatile = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
	FieldPCIeReplay     = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
)

// GPU is one GPU, or one MIG instance of it, as dcgm-exporter reports it.
type GPU struct {
	UUID     string `json:"uuid"`
	Index    string `json:"gpu"`
	Model    string `json:"model,omitempty"`
	Hostname string `json:"hostname,omitempty"`
	Driver   string `json:"driver,omitempty"`
	// MIG is the instance ("1g.5gb #13"); "" for the whole GPU.
	MIG string `json:"mig,omitempty"`
	// Pods are the pods dcgm-exporter saw on it (namespace/pod).
	Pods []string `json:"pods,omitempty"`
	// Fields are the exporter's values by field name.
	Fields map[string]float64 `json:"fields"`
}

// Value is a field's value, if the exporter reported it.
func (g GPU) Value(field string) (float64, bool) {
	v, ok := g.Fields[field]
	return v, ok
}

// Parse reads a dcgm-exporter scrape. Samples of one GPU (by UUID, else
// its index) and MIG instance make one GPU, in the order of the GPUs'
// indexes; metrics that are not the exporter's (no gpu or UUID label) are
// left out.
func Parse(r io.Reader) ([]GPU, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("dcgm-exporter metrics: %w", err)
	}
	byKey := map[string]*GPU{}
	for name, f := range families {
		if !strings.HasPrefix(name, "DCGM_") {
			continue
		}
		for _, m := range f.GetMetric() {
			l := labels(m)
			if l["UUID"] == "" && l["gpu"] == "" {
				continue
			}
			mig := ""
			if p := l["GPU_I_PROFILE"]; p != "" {
				mig = p + " #" + l["GPU_I_ID"]
			}
			key := cmp.Or(l["UUID"], "gpu"+l["gpu"]) + "/" + mig
			g := byKey[key]
			if g == nil {
				g = &GPU{UUID: l["UUID"], Index: l["gpu"], MIG: mig, Fields: map[string]float64{}}
				byKey[key] = g
			}
			g.Model = cmp.Or(g.Model, l["modelName"])
			g.Hostname = cmp.Or(g.Hostname, l["Hostname"])
			g.Driver = cmp.Or(g.Driver, l["DCGM_FI_DRIVER_VERSION"])
			// pod_name and pod_namespace: the exporter's --kubernetes-use-old-namespace (and its
			// releases before 2.0)
			if pod := cmp.Or(l["pod"], l["pod_name"]); pod != "" {
				if id := cmp.Or(l["namespace"], l["pod_namespace"]) + "/" + pod; !slices.Contains(g.Pods, id) {
					g.Pods = append(g.Pods, id)
				}
			}
			g.Fields[name] = value(m)
		}
	}
	out := make([]GPU, 0, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		out = append(out, *byKey[k])
	}
	slices.SortStableFunc(out, func(a, b GPU) int {
		ai, aerr := strconv.Atoi(a.Index)
		bi, berr := strconv.Atoi(b.Index)
		if aerr == nil && berr == nil && ai != bi {
			return ai - bi
		}
		return cmp.Compare(a.MIG, b.MIG)
	})
	return out, nil
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// Health is what a GPU's readings say: failures (the GPU cannot be
// trusted, or needs a reset or an RMA) and warnings, each with what to do.
// critical tells the XIDs that mean the GPU failed (not the application).
func (g GPU) Health(critical func(xid int) bool) (fails, warns []string) {
	if v, ok := g.Value(FieldXID); ok && v > 0 {
		xid := int(v)
		if critical(xid) {
			fails = append(fails, fmt.Sprintf("dcgm-exporter: last XID %d: drain the node and reset the GPU; RMA if it recurs", xid))
		} else {
			warns = append(warns, fmt.Sprintf("dcgm-exporter: last XID %d (an application's or the driver's error; look at the kernel log)", xid))
		}
	}
	if v, ok := g.Value(FieldRemapFailure); ok && v > 0 {
		fails = append(fails, "dcgm-exporter: row remapping failed: RMA the GPU")
	}
	if v, ok := g.Value(FieldRemappedUncorr); ok && v > 0 {
		warns = append(warns, fmt.Sprintf("dcgm-exporter: %.0f rows remapped for uncorrectable errors: watch it; RMA when remapping fails", v))
	}
	if v, ok := g.Value(FieldECCDBEVolatile); ok && v > 0 {
		fails = append(fails, fmt.Sprintf("dcgm-exporter: %.0f double-bit ECC error(s) since the driver loaded: drain and reset the GPU; RMA if they recur", v))
	}
	return fails, warns
}
