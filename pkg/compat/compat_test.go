package compat

import (
	"errors"
	"testing"
)

func TestParseDriver(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		want   DriverVersion
		branch bool
		bad    bool
	}{
		{in: "580.95.05", want: DriverVersion{Branch: 580, Minor: 95, Patch: 5}},
		{in: "570.26", want: DriverVersion{Branch: 570, Minor: 26, Patch: -1}},
		{in: "535.104.05", want: DriverVersion{Branch: 535, Minor: 104, Patch: 5}},
		{in: "580", want: DriverVersion{Branch: 580, Minor: -1, Patch: -1}, branch: true},
		{in: "", bad: true},
		{in: "58", bad: true},
		{in: "5800", bad: true},
		{in: "058", bad: true},
		{in: "580.", bad: true},
		{in: "580.95.05.1", bad: true},
		{in: "580.9a", bad: true},
		{in: "580.1234", bad: true},
		{in: "v580", bad: true},
		{in: "580-open", bad: true},
		{in: " 580", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDriver(tt.in)
			if tt.bad {
				if err == nil {
					t.Fatalf("ParseDriver(%q) = %v, want error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDriver(%q): %v", tt.in, err)
			}
			if got.Branch != tt.want.Branch || got.Minor != tt.want.Minor || got.Patch != tt.want.Patch {
				t.Errorf("ParseDriver(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if got.IsBranch() != tt.branch {
				t.Errorf("IsBranch() = %v, want %v", got.IsBranch(), tt.branch)
			}
			if got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func TestDriverCompare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"580.95.05", "580.95.05", 0},
		{"580.95.05", "580.65.06", 1},
		{"570.26", "570.124.06", -1}, // minor is numeric, not lexical
		{"570", "570.26", -1},
		{"575.51.03", "580", -1},
		{"590.44.01", "580.95.05", 1},
		{"580.95.5", "580.95.05", 0},
	}
	for _, tt := range tests {
		a, b := MustParseDriver(tt.a), MustParseDriver(tt.b)
		if got := a.Compare(b); got != tt.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := b.Compare(a); got != -tt.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}

func TestMinDriver(t *testing.T) {
	t.Parallel()
	// Every row of install-reference.md section 2 (Table 3, GA column).
	tests := []struct {
		cuda, want string
		ok         bool
	}{
		{"11.8", "520.61.05", true},
		{"12.0", "525.60.13", true},
		{"12.1", "530.30.02", true},
		{"12.2", "535.54.03", true},
		{"12.3", "545.23.06", true},
		{"12.4", "550.54.14", true},
		{"12.5", "555.42.02", true},
		{"12.6", "560.28.03", true},
		{"12.7", "", false}, // never released
		{"12.8", "570.26", true},
		{"12.9", "575.51.03", true},
		{"13.0", "580.65.06", true},
		{"13.1", "590.44.01", true},
		{"13.2", "595.45.04", true},
		{"13.3", "610.43.02", true},
		{"13.4", "", false},
		{"11.7", "", false},
		{"13", "", false},
		{"13.0.1", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.cuda, func(t *testing.T) {
			t.Parallel()
			got, ok := MinDriver(tt.cuda)
			if ok != tt.ok {
				t.Fatalf("MinDriver(%q) ok = %v, want %v", tt.cuda, ok, tt.ok)
			}
			if ok && got.String() != tt.want {
				t.Errorf("MinDriver(%q) = %s, want %s", tt.cuda, got, tt.want)
			}
		})
	}
}

func TestSatisfies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		driver, cuda string
		want         bool
		err          error
	}{
		{"580.95.05", "13.0", true, nil},
		{"580.65.06", "13.0", true, nil},
		{"580.65.05", "13.0", false, nil},
		{"575.57.08", "13.0", false, nil},
		{"580.95.05", "13.1", false, nil},
		{"590.44.01", "13.1", true, nil},
		{"580", "13.0", true, nil},  // branch: newest 580 release is picked
		{"570", "13.0", false, nil}, // 570 branch predates CUDA 13
		{"570", "12.8", true, nil},
		{"570.26", "12.8", true, nil},
		{"570.26", "12.9", false, nil},
		{"525", "12.0", true, nil},
		{"520.61.05", "11.8", true, nil},
		{"580.95.05", "12.4", true, nil}, // newer drivers stay backward compatible
		{"580.95.05", "12.7", false, ErrUnknownCUDA},
		{"580.95.05", "14.0", false, ErrUnknownCUDA},
	}
	for _, tt := range tests {
		t.Run(tt.driver+"/"+tt.cuda, func(t *testing.T) {
			t.Parallel()
			got, err := Satisfies(MustParseDriver(tt.driver), tt.cuda)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Satisfies(%s, %s) error = %v, want %v", tt.driver, tt.cuda, err, tt.err)
			}
			if got != tt.want {
				t.Errorf("Satisfies(%s, %s) = %v, want %v", tt.driver, tt.cuda, got, tt.want)
			}
		})
	}
	if _, err := Satisfies(MustParseDriver("580"), "13"); err == nil || errors.Is(err, ErrUnknownCUDA) {
		t.Errorf("malformed CUDA: error = %v, want a parse error", err)
	}
}

func TestReleasesOrderedAndFresh(t *testing.T) {
	t.Parallel()
	r := Releases()
	for i := 1; i < len(r); i++ {
		if r[i-1].CUDA.Compare(r[i].CUDA) >= 0 {
			t.Errorf("CUDA %s listed before %s", r[i-1].CUDA, r[i].CUDA)
		}
		if r[i-1].MinDriver.Compare(r[i].MinDriver) >= 0 {
			t.Errorf("driver for %s (%s) not older than for %s (%s)", r[i-1].CUDA, r[i-1].MinDriver, r[i].CUDA, r[i].MinDriver)
		}
	}
	r[0].CUDA.Major = 99
	if Releases()[0].CUDA.Major == 99 {
		t.Error("Releases returned shared state")
	}
	if got := Newest().String(); got != "13.3" {
		t.Errorf("Newest() = %s, want 13.3", got)
	}
}
