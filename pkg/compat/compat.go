// Package compat answers whether an NVIDIA driver can run a CUDA toolkit,
// from NVIDIA's "CUDA Toolkit and minimum required driver version" table for
// Linux x86_64 (CUDA release notes, section "CUDA Driver", Table 3), which the
// bill of materials holds (manifests/bom.yaml, cudaDrivers): inventory
// validation, the driver phases and the upgrade planner all read one table.
// It imports only that data: it is the arithmetic over it.
package compat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/manifests"
)

// ErrUnknownCUDA is returned for a well-formed CUDA version that is not in the
// table (a release that does not exist, such as 12.7, or one newer than this
// build of gpukit knows).
var ErrUnknownCUDA = errors.New("CUDA version not in the driver compatibility table")

// DriverVersion is an NVIDIA Linux driver version: an exact release
// ("580.95.05", "570.26") or a branch ("580") that lets the package manager
// pick the newest release of that branch.
type DriverVersion struct {
	// Branch is the first number, e.g. 580.
	Branch int
	// Minor and Patch are -1 when absent (a branch, or a two-part version).
	Minor int
	Patch int
	// text keeps the version as written so String round-trips zero padding
	// ("580.95.05" must not print as "580.95.5").
	text string
}

// ParseDriver parses "NNN", "NNN.N[NN]" or "NNN.N[NN].N[NN]".
func ParseDriver(s string) (DriverVersion, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 3 {
		return DriverVersion{}, fmt.Errorf("driver version %q: expected NNN, NNN.NN or NNN.NN.NN", s)
	}
	nums := []int{-1, -1, -1}
	for i, p := range parts {
		if !isDigits(p, 3) {
			return DriverVersion{}, fmt.Errorf("driver version %q: expected NNN, NNN.NN or NNN.NN.NN", s)
		}
		nums[i], _ = strconv.Atoi(p) // at most three digits: cannot fail
	}
	if len(parts[0]) != 3 || nums[0] < 100 {
		return DriverVersion{}, fmt.Errorf("driver version %q: branch must be three digits (e.g. 580)", s)
	}
	return DriverVersion{Branch: nums[0], Minor: nums[1], Patch: nums[2], text: s}, nil
}

// MustParseDriver is ParseDriver for constants; it panics on a malformed version.
func MustParseDriver(s string) DriverVersion {
	v, err := ParseDriver(s)
	if err != nil {
		panic(err)
	}
	return v
}

// IsBranch reports whether v names only a branch ("580").
func (v DriverVersion) IsBranch() bool { return v.Minor < 0 }

// String returns the version as it was parsed.
func (v DriverVersion) String() string {
	if v.text != "" {
		return v.text
	}
	switch {
	case v.Minor < 0:
		return strconv.Itoa(v.Branch)
	case v.Patch < 0:
		return fmt.Sprintf("%d.%02d", v.Branch, v.Minor)
	default:
		return fmt.Sprintf("%d.%02d.%02d", v.Branch, v.Minor, v.Patch)
	}
}

// Compare returns -1, 0 or +1 as v is older than, equal to or newer than w.
// Missing components count as 0, so the branch "570" sorts before "570.26";
// use Satisfies, not Compare, to ask whether a branch is new enough.
func (v DriverVersion) Compare(w DriverVersion) int {
	a := [3]int{v.Branch, max(v.Minor, 0), max(v.Patch, 0)}
	b := [3]int{w.Branch, max(w.Minor, 0), max(w.Patch, 0)}
	for i := range a {
		switch {
		case a[i] < b[i]:
			return -1
		case a[i] > b[i]:
			return 1
		}
	}
	return 0
}

// CUDAVersion is a CUDA toolkit release, major.minor ("13.0").
type CUDAVersion struct {
	Major, Minor int
}

// ParseCUDA parses "X.Y".
func ParseCUDA(s string) (CUDAVersion, error) {
	major, minor, ok := strings.Cut(s, ".")
	if !ok || !isDigits(major, 2) || !isDigits(minor, 2) {
		return CUDAVersion{}, fmt.Errorf("CUDA version %q: expected X.Y (e.g. 13.0)", s)
	}
	x, _ := strconv.Atoi(major)
	y, _ := strconv.Atoi(minor)
	return CUDAVersion{Major: x, Minor: y}, nil
}

// String returns "X.Y".
func (c CUDAVersion) String() string { return fmt.Sprintf("%d.%d", c.Major, c.Minor) }

// Compare returns -1, 0 or +1 as c is older than, equal to or newer than d.
func (c CUDAVersion) Compare(d CUDAVersion) int {
	switch {
	case c.Major != d.Major:
		return sign(c.Major - d.Major)
	default:
		return sign(c.Minor - d.Minor)
	}
}

// Release is one row of the table: a CUDA toolkit and the oldest driver (its
// GA release) that runs it.
type Release struct {
	CUDA      CUDAVersion
	MinDriver DriverVersion
}

// Releases returns the table, oldest CUDA first. The slice is fresh on every
// call so callers may keep or modify it.
func Releases() []Release {
	rows := manifests.Bill().CUDADrivers
	out := make([]Release, len(rows))
	for i, r := range rows {
		c, err := ParseCUDA(r.CUDA)
		if err != nil {
			panic(err) // the bill is part of the binary; a test covers every row
		}
		out[i] = Release{CUDA: c, MinDriver: MustParseDriver(r.MinDriver)}
	}
	return out
}

// Newest returns the newest CUDA release in the table.
func Newest() CUDAVersion {
	r := Releases()
	return r[len(r)-1].CUDA
}

// MinDriver returns the oldest driver that runs CUDA cuda ("13.0"), and false
// when cuda is malformed or not in the table.
func MinDriver(cuda string) (DriverVersion, bool) {
	c, err := ParseCUDA(cuda)
	if err != nil {
		return DriverVersion{}, false
	}
	for _, r := range Releases() {
		if r.CUDA == c {
			return r.MinDriver, true
		}
	}
	return DriverVersion{}, false
}

// Satisfies reports whether driver can run CUDA cuda. An exact driver must be
// at least the table's minimum. A branch ("570") cannot be compared
// release by release because the package manager picks its newest release,
// so it satisfies CUDA when the branch is at least the minimum driver's branch
// (570 for 12.8, 580 for 13.0). The error wraps ErrUnknownCUDA for a CUDA
// version that is not in the table.
func Satisfies(driver DriverVersion, cuda string) (bool, error) {
	minimum, ok := MinDriver(cuda)
	if !ok {
		if _, err := ParseCUDA(cuda); err != nil {
			return false, err
		}
		return false, fmt.Errorf("CUDA %s: %w", cuda, ErrUnknownCUDA)
	}
	if driver.IsBranch() {
		return driver.Branch >= minimum.Branch, nil
	}
	return driver.Compare(minimum) >= 0, nil
}

func isDigits(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// MaxCUDA returns the newest CUDA in the table that driver runs (what
// nvidia-smi shows as "CUDA Version"), and false when it runs none of them.
func MaxCUDA(driver DriverVersion) (CUDAVersion, bool) {
	var best CUDAVersion
	found := false
	for _, r := range Releases() {
		if driver.Compare(r.MinDriver) >= 0 {
			best, found = r.CUDA, true
		}
	}
	return best, found
}
