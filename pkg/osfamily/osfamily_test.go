package osfamily

import (
	"errors"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id, version string
		want        Family
		err         string
	}{
		{"ubuntu", "22.04", Ubuntu2204, ""},
		{"ubuntu", "24.04", Ubuntu2404, ""},
		{"debian", "12", Debian12, ""},
		{"rhel", "8.10", RHEL8, ""},
		{"rocky", "9.4", RHEL9, ""},
		{"almalinux", "9", RHEL9, ""},
		{"ubuntu", "20.04", "", "ubuntu versions supported: 22.04, 24.04"},
		{"ubuntu", "24.10", "", "ubuntu versions supported: 22.04, 24.04"},
		{"debian", "11", "", "debian versions supported: 12"},
		{"rocky", "10.0", "", "rocky versions supported: 8, 9"},
		{"arch", "", "", "gpukit installs on Ubuntu 22.04, Ubuntu 24.04, Debian 12, RHEL/Rocky/Alma 8, RHEL/Rocky/Alma 9"},
	} {
		got, err := Detect(tc.id, tc.version)
		if tc.err == "" {
			if err != nil || got.Family != tc.want {
				t.Errorf("%s %s: %v, %v; want %s", tc.id, tc.version, got.Family, err, tc.want)
			}
			continue
		}
		var ue *UnsupportedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s %s: %v; want %q", tc.id, tc.version, err, tc.err)
		}
	}
}

// Every row is complete and reachable by Detect.
func TestTable(t *testing.T) {
	t.Parallel()
	for _, i := range All() {
		if i.Name == "" || len(i.IDs) == 0 || i.Version == "" || i.CUDARepo == "" ||
			(i.PackageManager == Apt) != (i.Codename != "") {
			t.Errorf("incomplete row %+v", i)
		}
		for _, id := range i.IDs {
			if got, err := Detect(id, i.Version); err != nil || got.Family != i.Family {
				t.Errorf("Detect(%s, %s) = %v, %v", id, i.Version, got.Family, err)
			}
		}
	}
}

func TestVersionMatches(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		have, want string
		ok         bool
	}{
		{"5:28.2.2-1~ubuntu.24.04~noble", "28.2.2", true},
		{"3:28.2.2-1.el9", "28.2.2", true},
		{"20.10.24+dfsg1-1+deb12u1", "20.10.24", true},
		{"20.10.24+dfsg1-1+deb12u1", "20.10", true},
		{"5:28.2.20-1", "28.2.2", false},
		{"28.2.2", "28.2.2", true},
		{"", "28.2.2", false},
		{"1.37.2-1.1", "1.37.2", true},
		{"1.37.20-1.1", "1.37.2", false},
		{"2.4.2-1~debian.12~bookworm", "2.4.2", true},
		{"1.6.20~ds1-1+b1", "1.6.20", true},
	} {
		if got := UpstreamMatches(tt.have, tt.want); got != tt.ok {
			t.Errorf("UpstreamMatches(%q, %q) = %v", tt.have, tt.want, got)
		}
	}
}

func TestPackageArch(t *testing.T) {
	deb, rhel := Info{PackageManager: Apt}, Info{PackageManager: Dnf}
	for _, tc := range []struct {
		fam           Info
		machine, want string
	}{
		{deb, "x86_64", "amd64"}, {deb, "aarch64", "arm64"}, {deb, "ppc64le", "ppc64le"},
		{rhel, "x86_64", "x86_64"}, {rhel, "aarch64", "aarch64"},
	} {
		if got := tc.fam.PackageArch(tc.machine); got != tc.want {
			t.Errorf("%s on %s: %s, want %s", tc.machine, tc.fam.PackageManager, got, tc.want)
		}
	}
}
