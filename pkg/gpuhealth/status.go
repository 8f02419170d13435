// Package gpuhealth is gpukit status's view of a host's GPUs: nvidia-smi's
// report and the kernel's XIDs read over SSH (the status/gpus phase), each
// GPU's verdict, and dcgm-exporter's readings merged in by UUID where the
// monitoring stack runs. It sits above pkg/nvidia and pkg/dcgm so that the
// driver installer does not pull the exporter's reader (and the cluster's
// API client) in.
package gpuhealth

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gpukit/gpukit/pkg/dcgm"
	"github.com/gpukit/gpukit/pkg/engine"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/scripts"
)

// PhaseStatus reads every GPU host's state for gpukit status.
const PhaseStatus = "status/gpus"

// noSMI is a host's Error when it has no nvidia-smi: no GPU to show.
const noSMI = "no nvidia-smi"

// HostGPUs is one host's GPUs as gpukit status shows them.
type HostGPUs struct {
	Host string `json:"host"`
	// Status is the worst of its GPUs' (facts.HealthOK, HealthWarn,
	// HealthFail); fail too when nvidia-smi does not answer.
	Status string `json:"status"`
	Driver string `json:"driver,omitempty"`
	CUDA   string `json:"cuda,omitempty"`
	// Error is what nvidia-smi said instead of a report.
	Error string      `json:"error,omitempty"`
	GPUs  []GPUStatus `json:"gpus,omitempty"`
	// XIDs are the kernel's XID reports of this boot that name no GPU of
	// the report (or all of them when nvidia-smi did not answer).
	XIDs []XID `json:"xids,omitempty"`
	// DCGM are dcgm-exporter's readings when nvidia-smi listed no GPU (it
	// did not answer); when it did, readings of GPUs it did not list are
	// dropped.
	DCGM []dcgm.GPU `json:"dcgm,omitempty"`
}

// GPUStatus is one GPU: what nvidia-smi reported, its verdict, and the
// kernel's XID reports for it.
type GPUStatus struct {
	facts.SMIGPU
	Health facts.GPUHealth `json:"health"`
	// DCGM are dcgm-exporter's readings of the GPU (and of its MIG
	// instances), when the monitoring stack runs.
	DCGM []dcgm.GPU `json:"dcgm,omitempty"`
}

// AddDCGM puts dcgm-exporter's readings of the host's GPUs beside
// nvidia-smi's (by UUID) and adds what they say to the verdicts: an XID
// the kernel log of this boot no longer holds, failed row remapping,
// double-bit errors.
func (r *HostGPUs) AddDCGM(readings []dcgm.GPU) {
	critical := func(xid int) bool { return slices.Contains(criticalXIDs, xid) }
	for _, d := range readings {
		i := slices.IndexFunc(r.GPUs, func(g GPUStatus) bool { return d.UUID != "" && strings.EqualFold(g.UUID, d.UUID) })
		fails, warns := d.Health(critical)
		switch {
		case i < 0 && len(r.GPUs) > 0:
			// A GPU nvidia-smi does not list on this host: not this
			// host's to judge (a reading mislabelled, or made up).
			continue
		case i < 0:
			r.DCGM = append(r.DCGM, d)
			if len(fails) > 0 {
				r.Status = facts.HealthFail
			}
			continue
		}
		g := &r.GPUs[i]
		g.DCGM = append(g.DCGM, d)
		g.Health.Fails = append(g.Health.Fails, fails...)
		g.Health.Warns = append(g.Health.Warns, warns...)
		r.Status = worse(r.Status, g.Health.Status())
	}
}

// XID is one "NVRM: Xid (PCI:0000:17:00): 79, pid=..., GPU has fallen off
// the bus." line of the kernel log.
type XID struct {
	Bus     string `json:"bus"`
	Code    int    `json:"code"`
	Message string `json:"message,omitempty"`
}

var xidLine = regexp.MustCompile(`NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+),?\s*(.*)$`)

// ParseXIDs reads the kernel's XID lines.
func ParseXIDs(out []byte) []XID {
	var xs []XID
	for _, l := range strings.Split(string(out), "\n") {
		m := xidLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		code, _ := strconv.Atoi(m[2])
		xs = append(xs, XID{Bus: strings.ToLower(m[1]), Code: code, Message: strings.TrimSpace(m[3])})
	}
	return xs
}

// sameBus: an XID's "0000:17:00" names nvidia-smi's "00000000:17:00.0"
// (the XID has no function number).
func sameBus(xidBus, smiBus string) bool {
	noFunction := func(s string) string {
		if i := strings.LastIndexByte(s, '.'); i > strings.LastIndexByte(s, ':') {
			return s[:i]
		}
		return s
	}
	return xidBus != "" && facts.PCIAddress(noFunction(xidBus)) == facts.PCIAddress(noFunction(smiBus))
}

// criticalXIDs are the XID codes that mean the GPU (or its memory, its
// NVLinks, its firmware) failed, not the application: NVIDIA's XID
// catalogue's "reset the GPU / RMA" class.
var criticalXIDs = []int{48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 123, 136, 140, 143, 144, 145, 146, 147, 148, 149, 150, 154}

// ParseGPUStatus reads gpu-status.sh's output for host.
func ParseGPUStatus(host string, out []byte) HostGPUs {
	r := HostGPUs{Host: host, Status: facts.HealthOK}
	smi, xid, _ := bytes.Cut(out, []byte("\n=== xid\n"))
	smi, found := bytes.CutPrefix(smi, []byte("=== nvidia-smi\n"))
	if !found {
		if !bytes.Contains(out, []byte("=== nvidia-smi")) {
			r.Status, r.Error = "", noSMI
			return r
		}
		_, smi, _ = bytes.Cut(smi, []byte("=== nvidia-smi\n"))
	}
	xids := ParseXIDs(xid)
	q, err := facts.ParseSMIQuery(smi)
	if err != nil || q == nil || len(q.GPUs) == 0 {
		first, _, _ := strings.Cut(strings.TrimSpace(string(smi)), "\n")
		if first == "" && err != nil {
			first = err.Error()
		}
		r.Status, r.Error, r.XIDs = facts.HealthFail, first, xids
		return r
	}
	r.Driver, r.CUDA = q.DriverVersion, q.CUDAVersion
	for _, g := range q.GPUs {
		var theirs []XID
		xids = slices.DeleteFunc(xids, func(x XID) bool {
			if sameBus(x.Bus, g.BusID) {
				theirs = append(theirs, x)
				return true
			}
			return false
		})
		for _, x := range theirs {
			g.XIDs = append(g.XIDs, x.Code)
		}
		h := g.Health()
		for _, x := range theirs {
			if slices.Contains(criticalXIDs, x.Code) {
				h.Fails = append(h.Fails, "XID "+strconv.Itoa(x.Code)+" this boot ("+x.Message+"): drain the node and reset the GPU; RMA if it recurs")
			}
		}
		r.GPUs = append(r.GPUs, GPUStatus{SMIGPU: g, Health: h})
		r.Status = worse(r.Status, h.Status())
	}
	r.XIDs = xids
	for _, x := range xids {
		if slices.Contains(criticalXIDs, x.Code) {
			r.Status = facts.HealthFail
		}
	}
	return r
}

func worse(a, b string) string {
	rank := map[string]int{facts.HealthOK: 0, facts.HealthWarn: 1, facts.HealthFail: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Status is the phase that reads every host's GPUs (status/gpus).
type Status struct {
	mu    sync.Mutex
	hosts map[string]HostGPUs
}

// NewStatus returns the phase.
func NewStatus() *Status { return &Status{hosts: map[string]HostGPUs{}} }

func (*Status) Name() string { return PhaseStatus }
func (*Status) Title() string {
	return "Read each host's GPUs (health, temperatures, power, ECC, XIDs)"
}

func (s *Status) Run(ctx context.Context, h *engine.Host) error {
	cmd, err := scripts.GPUStatus()
	if err != nil {
		return err
	}
	res, err := h.Run(ctx, "read the GPUs' state", cmd)
	if err != nil {
		return err
	}
	r := ParseGPUStatus(h.Name(), res.Stdout)
	s.mu.Lock()
	s.hosts[h.Name()] = r
	s.mu.Unlock()
	return nil
}

// Hosts are the hosts read, with GPUs (a host without nvidia-smi is left
// out), in the order of names.
func (s *Status) Hosts(names []string) []HostGPUs {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []HostGPUs
	for _, n := range names {
		if r, ok := s.hosts[n]; ok && r.Error != noSMI {
			out = append(out, r)
		}
	}
	return out
}
