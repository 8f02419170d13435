package facts

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/gpusim/capture"
)

// The probe runs for real on this machine: the parser must understand it.
func TestParseRealProbeOutput(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the probe script targets Linux hosts")
	}
	probe, err := scripts.Probe(scripts.ProbeParams{GPUFields: GPUQueryFields()})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-s")
	cmd.Stdin = strings.NewReader(probe.Script)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	f, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if f.OS.ID == "" || f.Kernel == "" || f.Arch == "" || f.Hostname == "" {
		t.Errorf("identity facts missing: %+v", f)
	}
	if f.CPUs < 1 || f.MemKiB < 1 || f.RootFree < 1 {
		t.Errorf("hardware facts missing: cpus=%d mem=%d rootFree=%d", f.CPUs, f.MemKiB, f.RootFree)
	}
	if f.SecureBoot == "" {
		t.Error("secure boot state missing")
	}
	for i := 1; i < len(f.ListeningTCP); i++ {
		if f.ListeningTCP[i] <= f.ListeningTCP[i-1] {
			t.Fatalf("listening ports not sorted and unique: %v", f.ListeningTCP)
		}
	}
}

// GPU rows as the probe's nvidia-smi query prints them for real GPUs (replayed
// from captures by the labelled simulator, or derived from a capture that is
// a -q -x report alone).
func TestParseGPURowsFromRealCaptures(t *testing.T) {
	caps, err := capture.All(fixtures.Dir(t, "nvidia-smi"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range caps {
		t.Run(filepath.Base(c.Prefix), func(t *testing.T) {
			row, err := c.QueryGPU(GPUQueryFields(), "csv,noheader,nounits")
			if err != nil {
				t.Fatal(err)
			}
			f, err := Parse([]byte("nvidia_smi.present=true\nnvidia_smi.gpu=" + row))
			if err != nil {
				t.Fatal(err)
			}
			if len(f.GPUs) != 1 {
				t.Fatalf("GPUs = %+v", f.GPUs)
			}
			g := f.GPUs[0]
			// older drivers name data-center GPUs "Tesla T4"
			if g.Driver != c.Driver() || !strings.HasPrefix(g.Name, "NVIDIA") && !strings.HasPrefix(g.Name, "Tesla ") || g.MemMiB < 4000 ||
				!strings.HasPrefix(g.UUID, "GPU-") {
				t.Errorf("parsed %+v from %q", g, row)
			}
			if strings.Contains(c.Prefix, "-mig") && g.MIGMode != "Enabled" {
				t.Errorf("MIG capture parsed with MIG mode %q", g.MIGMode)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		check   func(*testing.T, *Facts)
		wantErr string
	}{
		{
			name: "ports deduplicated across tcp and tcp6",
			in:   "listen.tcp=22\nlisten.tcp=6443\nlisten.tcp=22\n",
			check: func(t *testing.T, f *Facts) {
				if len(f.ListeningTCP) != 2 || !f.Listening(22) || !f.Listening(6443) || f.Listening(80) {
					t.Errorf("ports %v", f.ListeningTCP)
				}
			},
		},
		{
			name: "nvidia-smi failure is a fact",
			in:   "nvidia_smi.present=true\nnvidia_smi.error=Failed to initialize NVML: Driver/library version mismatch \n",
			check: func(t *testing.T, f *Facts) {
				if !f.NvidiaSMI || f.NvidiaSMIError != "Failed to initialize NVML: Driver/library version mismatch" {
					t.Errorf("%+v", f)
				}
			},
		},
		{
			name: "secure boot from mokutil and efivar",
			in:   "secureboot=SecureBoot enabled\n",
			check: func(t *testing.T, f *Facts) {
				if !f.SecureBootEnabled() {
					t.Error("not enabled")
				}
			},
		},
		{
			name: "secure boot disabled",
			in:   "secureboot=SecureBoot disabled\n",
			check: func(t *testing.T, f *Facts) {
				if f.SecureBootEnabled() {
					t.Error("enabled")
				}
			},
		},
		{
			name: "banner lines ignored, disks and pci gpus listed",
			in:   "Welcome!\ndisk=nvme0n1 3840755982336\npci.gpu=0000:17:00.0 0x2330\n",
			check: func(t *testing.T, f *Facts) {
				if len(f.Disks) != 1 || f.Disks[0].Bytes != 3840755982336 || len(f.PCIGPUs) != 1 ||
					f.PCIGPUs[0].DeviceID != "0x2330" {
					t.Errorf("%+v", f)
				}
			},
		},
		{
			name: "a kubeadm node's API and a swarm node's state",
			in:   "swarm=inactive\nkubelet.server=https://10.0.0.1:6443\n",
			check: func(t *testing.T, f *Facts) {
				if f.KubeletServer != "https://10.0.0.1:6443" || f.Swarm != "inactive" {
					t.Errorf("%+v", f)
				}
			},
		},
		{name: "bad number", in: "os.id=debian\ncpus=two\n", wantErr: "probe output line 2 (cpus)"},
		{name: "short gpu row", in: "nvidia_smi.gpu=0, GPU-1\n", wantErr: "want at least 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, f)
		})
	}
}

// A GPU on the PCI bus that nvidia-smi does not list is named by its
// address when nvidia-smi gives bus ids, else counted.
func TestUnlisted(t *testing.T) {
	t.Parallel()
	pci := []PCIDevice{{Address: "0000:17:00.0", DeviceID: "0x2330"}, {Address: "0000:18:00.0", DeviceID: "0x2330"}, {Address: "0000:AB:00.0", DeviceID: "0x2330"}}
	tests := []struct {
		name string
		gpus []GPU
		want []string
	}{
		{"all listed by bus id", []GPU{{BusID: "00000000:17:00.0"}, {BusID: "00000000:18:00.0"}, {BusID: "00000000:ab:00.0"}}, nil},
		{"one missing by bus id", []GPU{{BusID: "00000000:17:00.0"}, {BusID: "00000000:AB:00.0"}}, []string{"0000:18:00.0"}},
		{"older probe without bus ids: the surplus", []GPU{{Index: 0}}, []string{"0000:18:00.0", "0000:AB:00.0"}},
		{"no driver: all", nil, []string{"0000:17:00.0", "0000:18:00.0", "0000:AB:00.0"}},
	}
	for _, tt := range tests {
		f := &Facts{PCIGPUs: pci, GPUs: tt.gpus}
		var got []string
		for _, d := range f.Unlisted() {
			got = append(got, d.Address)
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if SamePCIAddress("", "") {
		t.Error("two empty addresses are no match")
	}
}
