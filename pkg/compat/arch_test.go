package compat_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/compat"
	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/test/fixtures"
)

// One GPU of each generation, by the device id the PCI bus shows before any
// driver is installed, and by the name nvidia-smi gives it after.
func TestRecognize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		device, product, want string
	}{
		{"0x06d1", "Tesla C2050", "Fermi"},
		{"0x102d", "Tesla K80", "Kepler"},
		{"0x1023", "Tesla K40m", "Kepler"},
		{"0x128b", "", "Kepler"}, // GT 710
		{"0x13f2", "Tesla M60", "Maxwell"},
		{"0x17fd", "Tesla M40 24GB", "Maxwell"},
		{"0x15f8", "Tesla P100-PCIE-16GB", "Pascal"},
		{"0x1b38", "Tesla P40", "Pascal"},
		{"0x1bb3", "Tesla P4", "Pascal"},
		{"0x1db4", "Tesla V100-PCIE-16GB", "Volta"},
		{"0x1db6", "Tesla V100-PCIE-32GB", "Volta"},
		{"0x1df6", "Tesla V100S-PCIE-32GB", "Volta"},
		{"0x1eb8", "Tesla T4", "Turing"},
		{"0x1e81", "NVIDIA GeForce RTX 2080 SUPER", "Turing"},
		{"0x2182", "NVIDIA GeForce GTX 1660 Ti", "Turing"},
		{"0x20b0", "NVIDIA A100-SXM4-40GB", "Ampere"},
		{"0x20b5", "NVIDIA A100 80GB PCIe", "Ampere"},
		{"0x2236", "NVIDIA A10", "Ampere"},
		{"0x2204", "NVIDIA GeForce RTX 3090", "Ampere"},
		{"0x25b6", "NVIDIA A16", "Ampere"},
		{"0x2330", "NVIDIA H100 80GB HBM3", "Hopper"},
		{"0x2335", "NVIDIA H200", "Hopper"},
		{"0x2342", "NVIDIA GH200 480GB", "Hopper"},
		{"0x26b9", "NVIDIA L40S", "Ada Lovelace"},
		{"0x27b8", "NVIDIA L4", "Ada Lovelace"},
		{"0x2684", "NVIDIA GeForce RTX 4090", "Ada Lovelace"},
		{"0x2901", "NVIDIA B200", "Blackwell"},
		{"0x2941", "NVIDIA GB200", "Blackwell"},
		{"0x31c2", "NVIDIA GB300", "Blackwell"},
		{"0x2b85", "NVIDIA GeForce RTX 5090", "Blackwell"},
		{"0x2bb1", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "Blackwell"},
		{"0x2c02", "NVIDIA GeForce RTX 5080", "Blackwell"},
	}
	for _, tt := range tests {
		t.Run(tt.want+"/"+tt.device, func(t *testing.T) {
			t.Parallel()
			if a, ok := compat.Recognize(tt.device, ""); !ok || a.Name != tt.want {
				t.Errorf("device %s: %s %v, want %s", tt.device, a.Name, ok, tt.want)
			}
			if tt.product == "" {
				return
			}
			// An id beyond the table (a newer GPU, or a site's odd board):
			// the name decides.
			if a, ok := compat.Recognize("0xffff", tt.product); !ok || a.Name != tt.want {
				t.Errorf("product %q: %s %v, want %s", tt.product, a.Name, ok, tt.want)
			}
		})
	}
}

// Names are prefixes of whole words, a model number never a prefix of a
// longer one, so that no GPU passes for another generation's.
func TestRecognizeByNameOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		product, want string // "" : not recognised
	}{
		{"NVIDIA RTX A6000", "Ampere"},
		{"NVIDIA RTX 6000 Ada Generation", "Ada Lovelace"},
		{"Quadro RTX 6000", "Turing"},
		{"NVIDIA A100X", "Ampere"},
		{"NVIDIA T400", ""}, // a T4 prefix, not a T4
		{"NVIDIA A2000", ""},
		{"NVIDIA L40", "Ada Lovelace"},
		{"NVIDIA H20", "Hopper"},
		{"NVIDIA GeForce GTX 1080 Ti", "Pascal"},
		{"NVIDIA GeForce GTX 1650", "Turing"}, // TU117, a GTX 16
		{"Tesla M2090", "Fermi"},
		{"Tesla M60", "Maxwell"},
		{"NVIDIA GeForce RTX 3060 Laptop GPU", "Ampere"},
		{"Some Future GPU", ""},
		{"", ""},
	}
	for _, tt := range tests {
		a, ok := compat.Recognize("", tt.product)
		if ok != (tt.want != "") || a.Name != tt.want {
			t.Errorf("%q: %q %v, want %q", tt.product, a.Name, ok, tt.want)
		}
	}
}

func TestParseDeviceID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{"0x1e81": 0x1e81, "0x1E8110DE": 0x1e81, "1EB810DE": 0x1eb8, "10de:2b85": 0x2b85, "26b9": 0x26b9} {
		if got, ok := compat.ParseDeviceID(in); !ok || got != want {
			t.Errorf("ParseDeviceID(%q) = %#x %v, want %#x", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "0x", "zz", "0x123456", "10de:"} {
		if _, ok := compat.ParseDeviceID(in); ok {
			t.Errorf("ParseDeviceID(%q) accepted", in)
		}
	}
}

// The decisions plan makes per pair: a branch or toolkit that dropped (or
// predates) a generation, with the one that fits.
func TestArchitectureSupport(t *testing.T) {
	t.Parallel()
	arch := func(name string) compat.Architecture {
		for _, a := range compat.Architectures() {
			if a.Name == name {
				return a
			}
		}
		t.Fatalf("no architecture %s", name)
		return compat.Architecture{}
	}
	tests := []struct {
		arch    string
		branch  int
		cuda    string
		branchE string // "" : supported
		cudaE   string
	}{
		{"Kepler", 580, "13.0", "the last branch that drives them is 470", "the last toolkit that does is 11.8"},
		{"Kepler", 470, "11.8", "", ""},
		{"Maxwell", 590, "13.0", "the last branch that drives them is 580", "the last toolkit that does is 12.9"},
		{"Pascal", 580, "12.9", "", ""},
		{"Volta", 595, "13.2", "the last branch that drives them is 580", "the last toolkit that does is 12.9"},
		{"Volta", 580, "12.8", "", ""},
		{"Turing", 610, "13.3", "", ""},
		{"Ampere", 580, "13.0", "", ""},
		{"Hopper", 470, "11.4", "they need branch 520 or newer", "they need CUDA 11.8 or newer"},
		{"Ada Lovelace", 535, "12.2", "", ""},
		{"Blackwell", 535, "12.2", "they need branch 570 or newer", "they need CUDA 12.8 or newer"},
		{"Blackwell", 580, "13.0", "", ""},
	}
	for _, tt := range tests {
		a := arch(tt.arch)
		err := a.SupportsBranch(tt.branch)
		if (err == nil) != (tt.branchE == "") || err != nil && !strings.Contains(err.Error(), tt.branchE) {
			t.Errorf("%s on branch %d: %v, want %q", tt.arch, tt.branch, err, tt.branchE)
		}
		c, _ := compat.ParseCUDA(tt.cuda)
		err = a.SupportsCUDA(c)
		if (err == nil) != (tt.cudaE == "") || err != nil && !strings.Contains(err.Error(), tt.cudaE) {
			t.Errorf("%s with CUDA %s: %v, want %q", tt.arch, tt.cuda, err, tt.cudaE)
		}
	}
}

var reportName = regexp.MustCompile(`__q(-x\.xml|\.txt|-[a-z]+\.txt)$`)

// Every real nvidia-smi capture: its device id and its name give the
// architecture the driver itself reports, and the table says the CUDA
// version the driver reports (for drivers no older than the table).
func TestCapturesAgreeWithTheTable(t *testing.T) {
	t.Parallel()
	dir := fixtures.Dir(t, "nvidia-smi")
	files, _ := filepath.Glob(filepath.Join(dir, "*__q*"))
	checked := 0
	for _, p := range files {
		if !reportName.MatchString(filepath.Base(p)) {
			continue // --query-gpu CSV
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var q *facts.SMIQuery
		if strings.HasSuffix(p, ".xml") {
			q, err = facts.ParseSMIQueryXML(b)
		} else {
			q, err = facts.ParseSMIQueryText(b)
		}
		if err != nil || q == nil {
			t.Fatalf("%s: %v", p, err)
		}
		name := filepath.Base(p)
		for _, g := range q.GPUs {
			byName, okName := compat.Recognize("", g.ProductName)
			byID, okID := byName, okName
			if _, ok := compat.ParseDeviceID(g.DeviceID); ok {
				byID, okID = compat.Recognize(g.DeviceID, "")
			} else if g.DeviceID != "REDACTED" { // telegraf's test data hides it
				t.Errorf("%s: device id %q", name, g.DeviceID)
			}
			if !okID || !okName || byID.Name != byName.Name || g.Architecture != "" && g.Architecture != byID.Name {
				t.Errorf("%s: device %s is %q, %q is %q; the driver says %q", name, g.DeviceID, byID.Name, g.ProductName, byName.Name, g.Architecture)
			}
		}
		d, err := compat.ParseDriver(q.DriverVersion)
		if err != nil {
			t.Fatalf("%s: driver %q: %v", name, q.DriverVersion, err)
		}
		if got, ok := compat.MaxCUDA(d); ok && got.String() != q.CUDAVersion {
			t.Errorf("%s: driver %s runs CUDA %s by the table, reports %s", name, d, got, q.CUDAVersion)
		} else if ok {
			checked++
		}
	}
	if checked < 5 {
		t.Errorf("%d captures checked against the table, want every recent one", checked)
	}
}
