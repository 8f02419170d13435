// Package osfamily is the one table of the operating systems gpukit installs
// on: which os-release identities belong to which family, and what differs
// between families (package manager, release codename, NVIDIA's repository
// name). Preflight's OS check and every script template read it, so adding a
// family is one row here plus its golden scripts.
package osfamily

import (
	"fmt"
	"slices"
	"strings"
)

// Family names one supported OS release line; it is also the name of the
// golden files of every script rendered for it.
type Family string

const (
	Debian12   Family = "debian-12"
	Ubuntu2204 Family = "ubuntu-22.04"
	Ubuntu2404 Family = "ubuntu-24.04"
	// RHEL8 and RHEL9 cover Red Hat Enterprise Linux, Rocky Linux and
	// AlmaLinux of that major version: they share packages and NVIDIA's
	// repository.
	RHEL8 Family = "rhel-8"
	RHEL9 Family = "rhel-9"
)

// PackageManager is how a family installs packages.
type PackageManager string

const (
	Apt PackageManager = "apt"
	Dnf PackageManager = "dnf"
)

// Info is one row of the table.
type Info struct {
	Family Family
	// Name is how people call it ("Ubuntu 24.04", "RHEL/Rocky/Alma 9").
	Name string
	// IDs are the os-release ID values of the family.
	IDs []string
	// Version is the VERSION_ID it matches: the whole value when it has a
	// dot (Ubuntu's "24.04"), else the major version (Rocky's "9.4" is 9).
	Version        string
	PackageManager PackageManager
	// Codename is the Debian/Ubuntu release name (apt sources); empty for RHEL.
	Codename string
	// CUDARepo is the distro directory of NVIDIA's CUDA repository
	// (developer.download.nvidia.com/compute/cuda/repos/<CUDARepo>/<arch>/).
	CUDARepo string
	// SignedNVIDIAModules: the OS vendor ships NVIDIA kernel modules signed
	// for Secure Boot (Ubuntu's linux-modules-nvidia, RHEL's precompiled
	// streams), so spec.nvidia.secureBoot: signed can work.
	SignedNVIDIAModules bool
}

// table is in the order documentation lists the families.
var table = []Info{
	{Family: Ubuntu2204, Name: "Ubuntu 22.04", IDs: []string{"ubuntu"}, Version: "22.04", PackageManager: Apt, Codename: "jammy", CUDARepo: "ubuntu2204", SignedNVIDIAModules: true},
	{Family: Ubuntu2404, Name: "Ubuntu 24.04", IDs: []string{"ubuntu"}, Version: "24.04", PackageManager: Apt, Codename: "noble", CUDARepo: "ubuntu2404", SignedNVIDIAModules: true},
	{Family: Debian12, Name: "Debian 12", IDs: []string{"debian"}, Version: "12", PackageManager: Apt, Codename: "bookworm", CUDARepo: "debian12"},
	{Family: RHEL8, Name: "RHEL/Rocky/Alma 8", IDs: []string{"rhel", "rocky", "almalinux"}, Version: "8", PackageManager: Dnf, CUDARepo: "rhel8", SignedNVIDIAModules: true},
	{Family: RHEL9, Name: "RHEL/Rocky/Alma 9", IDs: []string{"rhel", "rocky", "almalinux"}, Version: "9", PackageManager: Dnf, CUDARepo: "rhel9", SignedNVIDIAModules: true},
}

// All returns every supported family, in documentation order (a copy).
func All() []Info {
	out := make([]Info, len(table))
	copy(out, table)
	return out
}

// UnsupportedError is an OS that no family covers. It says what is
// supported, for the OS or for all.
type UnsupportedError struct {
	ID, Version string
	// Versions are the supported versions of ID; empty when no version of
	// ID is supported.
	Versions []string
}

func (e *UnsupportedError) Error() string {
	if len(e.Versions) > 0 {
		return fmt.Sprintf("%s %s is not supported: %s versions supported: %s", e.ID, e.Version, e.ID, strings.Join(e.Versions, ", "))
	}
	return fmt.Sprintf("%s %s is not supported: gpukit installs on %s", e.ID, e.Version, Supported())
}

// Detect maps os-release's ID and VERSION_ID to a family.
func Detect(id, versionID string) (Info, error) {
	var versions []string
	for _, i := range table {
		if !slices.Contains(i.IDs, id) {
			continue
		}
		v := versionID
		if !strings.Contains(i.Version, ".") {
			v, _, _ = strings.Cut(versionID, ".")
		}
		if v == i.Version {
			return i, nil
		}
		versions = append(versions, i.Version)
	}
	return Info{}, &UnsupportedError{ID: id, Version: versionID, Versions: versions}
}

// Supported is the human list of families ("Ubuntu 22.04, Ubuntu 24.04, ...").
func Supported() string {
	names := make([]string, len(table))
	for i, row := range table {
		names[i] = row.Name
	}
	return strings.Join(names, ", ")
}

// Package is an installed package as a host's package manager reports it.
type Package struct {
	// Version is the full version (5:28.2.2-1~ubuntu.24.04~noble, 1.37.2-1.1).
	Version string
	// Held: apt-mark hold / dnf versionlock keep it at its version.
	Held bool
}

// UpstreamMatches accepts a package version (5:28.2.2-1~ubuntu.24.04~noble,
// 20.10.24+dfsg1-1+deb12u1, 3:28.2.2-1.el9, 1.37.2-1.1) whose upstream part
// is want, a prefix of it at a dot, or want with a repack suffix (+dfsg1).
func UpstreamMatches(have, want string) bool {
	if i := strings.IndexByte(have, ':'); i >= 0 {
		have = have[i+1:]
	}
	for _, sep := range []string{"-", ".", "+", "~"} {
		if strings.HasPrefix(have, want+sep) {
			return true
		}
	}
	return have == want
}

// DebArch is a machine's architecture as uname -m names it (x86_64,
// aarch64) the way Debian, Ubuntu and OCI image platforms name it (amd64,
// arm64); "" for one gpukit installs nothing on.
func DebArch(machine string) string {
	switch machine {
	case "x86_64":
		return "amd64"
	case "aarch64":
		return "arm64"
	}
	return ""
}

// PackageArch is a machine's architecture as i's package manager names it:
// Debian's on apt, uname -m's on dnf.
func (i Info) PackageArch(machine string) string {
	if d := DebArch(machine); i.PackageManager == Apt && d != "" {
		return d
	}
	return machine
}
