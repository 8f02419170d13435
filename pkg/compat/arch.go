package compat

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gpukit/gpukit/manifests"
)

// Architecture is a GPU generation and what supports it (the bill's
// gpuArchitectures).
type Architecture struct {
	Name                    string
	FirstBranch, LastBranch int         // 0: unbounded
	FirstCUDA, LastCUDA     CUDAVersion // zero: unbounded
	OpenModules             bool
	ranges                  [][2]uint64
	names                   [][]string // product-name prefixes, in words
}

// Architectures returns the table, oldest first. The slice is fresh on
// every call so callers may keep or modify it.
func Architectures() []Architecture { return slices.Clone(architectures()) }

// architectures is the table read from the bill once: Recognize runs for
// every GPU of every host of a run.
var architectures = sync.OnceValue(func() []Architecture {
	rows := manifests.Bill().GPUArchitectures
	out := make([]Architecture, len(rows))
	for i, r := range rows {
		a := Architecture{Name: r.Name, FirstBranch: r.FirstBranch, LastBranch: r.LastBranch, OpenModules: r.OpenModules}
		a.FirstCUDA = mustCUDA(r.FirstCUDA)
		a.LastCUDA = mustCUDA(r.LastCUDA)
		for _, s := range r.PCIDevices {
			lo, hi, _ := strings.Cut(s, "-")
			l, err1 := strconv.ParseUint(lo, 16, 16)
			h, err2 := strconv.ParseUint(hi, 16, 16)
			if err1 != nil || err2 != nil {
				panic(fmt.Sprintf("gpuArchitectures %s: pciDevices %q", r.Name, s)) // the bill's own test checks every row
			}
			a.ranges = append(a.ranges, [2]uint64{l, h})
		}
		for _, n := range r.Names {
			a.names = append(a.names, words(n))
		}
		out[i] = a
	}
	return out
})

func mustCUDA(s string) CUDAVersion {
	if s == "" {
		return CUDAVersion{}
	}
	c, err := ParseCUDA(s)
	if err != nil {
		panic(err)
	}
	return c
}

// ParseDeviceID reads an NVIDIA PCI device id as the probe (sysfs, "0x1e81"),
// nvidia-smi -q ("0x1E8110DE": device and vendor) or lspci ("10de:1e81")
// print it.
func ParseDeviceID(s string) (uint64, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "10de:")
	s = strings.TrimPrefix(s, "0x")
	if len(s) == 8 && strings.HasSuffix(s, "10de") {
		s = s[:4]
	}
	if len(s) == 0 || len(s) > 4 {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 16, 16)
	return id, err == nil
}

// Recognize names a GPU's architecture from its PCI device id, else from
// its product name (nvidia-smi's, e.g. "NVIDIA A100-SXM4-80GB" or "Tesla
// K80"); false for a GPU newer than the table or one it cannot tell.
func Recognize(deviceID, product string) (Architecture, bool) {
	archs := architectures()
	if id, ok := ParseDeviceID(deviceID); ok {
		for _, a := range archs {
			for _, r := range a.ranges {
				if id >= r[0] && id <= r[1] {
					return a, true
				}
			}
		}
	}
	if product == "" {
		return Architecture{}, false
	}
	p := words(strings.TrimPrefix(strings.TrimSpace(product), "NVIDIA "))
	// The longest prefix wins: "RTX 6000 Ada" is Ada, not Turing's RTX
	// 6000; "Tesla M2090" is Fermi, not a Maxwell "Tesla M".
	best, bestLen := -1, 0
	for i, a := range archs {
		for _, n := range a.names {
			if l := len(strings.Join(n, " ")); l > bestLen && hasPrefixWords(p, n) {
				best, bestLen = i, l
			}
		}
	}
	if best < 0 {
		return Architecture{}, false
	}
	return archs[best], true
}

// words splits a product name on spaces and hyphens ("A100-SXM4-80GB").
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == ' ' || r == '-' || r == '_' })
}

// hasPrefixWords: the name begins with the prefix's words, the last of them
// possibly cut short. A last word ending in a letter stands for a series
// ("Tesla K" of K80, "RTX A" of A6000). One ending in a digit is a model
// ("A10", "T4"), which a longer number is not ("A100", "T400"), but a
// suffix is ("A100X"); a bare two-digit word is a series of four-digit
// models ("GeForce RTX 30" of 3090, "GeForce GTX 10" of 1080).
func hasPrefixWords(name, prefix []string) bool {
	if len(prefix) == 0 || len(name) < len(prefix) {
		return false
	}
	n := len(prefix) - 1
	for i := range n {
		if name[i] != prefix[i] {
			return false
		}
	}
	w, x := prefix[n], name[n]
	if !strings.HasPrefix(x, w) {
		return false
	}
	rest := x[len(w):]
	switch {
	case rest == "" || !isDigit(w[len(w)-1]):
		return true
	case !isDigit(rest[0]):
		return true
	}
	return len(w) == 2 && isDigit(w[0]) && len(rest) == 2 && isDigit(rest[1])
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// SupportsBranch says whether driver branch b drives the architecture, and
// if not, which branches do.
func (a Architecture) SupportsBranch(b int) error {
	switch {
	case a.LastBranch != 0 && b > a.LastBranch:
		return fmt.Errorf("driver branch %d dropped %s GPUs: the last branch that drives them is %d", b, a.Name, a.LastBranch)
	case a.FirstBranch != 0 && b < a.FirstBranch:
		return fmt.Errorf("driver branch %d predates %s GPUs: they need branch %d or newer", b, a.Name, a.FirstBranch)
	}
	return nil
}

// SupportsCUDA says whether the CUDA toolkit c targets the architecture, and
// if not, which toolkits do.
func (a Architecture) SupportsCUDA(c CUDAVersion) error {
	switch {
	case a.LastCUDA != (CUDAVersion{}) && c.Compare(a.LastCUDA) > 0:
		return fmt.Errorf("CUDA %s no longer targets %s GPUs: the last toolkit that does is %s", c, a.Name, a.LastCUDA)
	case a.FirstCUDA != (CUDAVersion{}) && c.Compare(a.FirstCUDA) < 0:
		return fmt.Errorf("CUDA %s predates %s GPUs: they need CUDA %s or newer", c, a.Name, a.FirstCUDA)
	}
	return nil
}
