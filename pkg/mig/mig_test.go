package mig_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/mig"
	"github.com/gpukit/gpukit/test/fixtures"
)

func gpu(i int, name, mode string) facts.GPU {
	return facts.GPU{Index: i, Name: name, MIGMode: mode, MIGPending: mode}
}

const (
	a100 = "NVIDIA A100-SXM4-40GB"
	h100 = "NVIDIA H100 80GB HBM3"
)

func model(t *testing.T, product string, branch int) mig.Model {
	t.Helper()
	m, err := mig.ModelOf(&facts.Facts{}, gpu(0, product, "Disabled"), branch)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// What fits is what NVIDIA's placements allow: combinations from the MIG
// user guide's valid configurations, and ones it does not list.
func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		product string
		names   []string
		err     string
	}{
		{a100, []string{"3g.20gb", "3g.20gb"}, ""},
		{a100, []string{"4g.20gb", "3g.20gb"}, ""},
		{a100, []string{"3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"}, ""},
		{a100, []string{"2g.10gb", "2g.10gb", "2g.10gb", "1g.5gb"}, ""},
		{a100, []string{"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"}, ""},
		{a100, []string{"3g.20gb", "2g.10gb", "2g.10gb"}, ""},
		{a100, []string{"3g.20gb", "3g.20gb", "1g.5gb"}, "overlap in every arrangement"},
		{a100, []string{"4g.20gb", "2g.10gb", "2g.10gb"}, "has 7 compute slices"},
		{a100, []string{"4g.20gb", "4g.20gb"}, "at most 1 instance(s) of 4g.20gb, not 2"},
		{a100, []string{"7g.40gb", "1g.5gb"}, "has 7 compute slices"},
		{a100, []string{"3g.40gb"}, "offers no profile 3g.40gb"},
		{a100, []string{"1g.5gb+me", "1g.5gb+me"}, "at most 1"},
		{h100, []string{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}, ""},
		{h100, []string{"1g.20gb", "1g.20gb", "1g.20gb", "1g.20gb"}, ""},
		{h100, []string{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}, "at most 7"},
		{"NVIDIA A30", []string{"2g.12gb", "1g.6gb", "1g.6gb"}, ""},
		{"NVIDIA A30", []string{"2g.12gb", "2g.12gb", "1g.6gb"}, "compute slices"},
	} {
		t.Run(strings.Join(tc.names, ","), func(t *testing.T) {
			m := model(t, tc.product, 0)
			ps, err := m.Place(tc.names)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			used := map[int]bool{}
			for _, p := range ps {
				for s := p.Start; s < p.Start+p.Slices; s++ {
					if used[s] {
						t.Fatalf("slice %d used twice: %+v", s, ps)
					}
					used[s] = true
				}
			}
		})
	}
}

// The bill's table agrees with a real -lgip of the same GPU (names, ids,
// counts), and a GPU with MIG on is modelled from what it lists.
func TestModelAgreesWithRealListing(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(fixtures.Dir(t, "nvidia-smi"), "h100-80gb-hbm3__mig-lgip.txt"))
	if err != nil {
		t.Fatal(err)
	}
	listed, err := facts.ParseMIGProfiles(string(b))
	if err != nil {
		t.Fatal(err)
	}
	bill := model(t, h100, 0)
	on, err := mig.ModelOf(&facts.Facts{MIG: listed}, gpu(0, h100, "Enabled"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range listed[:7] {
		p, ok := bill.Profile(l.Name)
		if !ok || p.ID != l.ID || p.Max != l.Total {
			t.Errorf("bill %+v, the GPU lists %+v", p, l)
		}
	}
	if len(on.Profiles) != len(bill.Profiles) {
		t.Errorf("modelled from the listing: %d profiles, bill %d", len(on.Profiles), len(bill.Profiles))
	}
	// A GPU the bill does not know, from its listing alone: the same
	// placements the bill gives this model.
	unknown, err := mig.ModelOf(&facts.Facts{MIG: listed}, gpu(0, "NVIDIA H100 Future Edition", "Enabled"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range bill.Profiles {
		u, ok := unknown.Profile(p.Name)
		if !ok || u.Slices != p.Slices || !slices.Equal(u.Starts, p.Starts) {
			t.Errorf("derived %+v, bill %+v", u, p)
		}
	}
	if _, err := mig.ModelOf(&facts.Facts{}, gpu(0, "NVIDIA H100 Future Edition", "Disabled"), 0); err == nil {
		t.Error("an unknown GPU with MIG off was modelled")
	}
	if _, err := mig.ModelOf(&facts.Facts{}, gpu(0, "NVIDIA L40S", ""), 0); err == nil {
		t.Error("a GPU without MIG was modelled")
	}
	// Drivers 510 and 515 lack the A100's 1g.10gb.
	if _, ok := model(t, a100, 515).Profile("1g.10gb"); ok {
		t.Error("1g.10gb offered on branch 515")
	}
	if _, ok := model(t, a100, 580).Profile("1g.10gb"); !ok {
		t.Error("1g.10gb not offered on branch 580")
	}
}

func TestResolve(t *testing.T) {
	yes, no := true, false
	spec := &inventory.Spec{}
	spec.NVIDIA.MIG = inventory.MIG{
		Layout: "all-balanced",
		Rules: []inventory.MIGRule{
			{Labels: map[string]string{"pool": "inference"}, Layout: "all-1g.10gb"},
			{GPU: "A100", Layout: "all-3g.20gb"},
		},
		Layouts: map[string][]inventory.MIGGroup{
			"mixed": {
				{GPUs: []int{0}, Profiles: map[string]int{"3g.40gb": 1, "1g.10gb": 4}},
				{GPUs: []int{1}, Enabled: &no},
				{Enabled: &yes, Profiles: map[string]int{"7g.80gb": 1}},
			},
			"too-much": {{Profiles: map[string]int{"4g.40gb": 1, "3g.40gb": 2}}},
			"first":    {{GPUs: []int{0}, Profiles: map[string]int{"2g.20gb": 1}}},
		},
	}
	h100s := &facts.Facts{GPUs: []facts.GPU{gpu(0, h100, "Disabled"), gpu(1, h100, "Disabled"), gpu(2, h100, "Enabled")}}
	a100s := &facts.Facts{GPUs: []facts.GPU{gpu(0, a100, "Disabled")}}
	l40s := &facts.Facts{GPUs: []facts.GPU{{Index: 0, Name: "NVIDIA L40S"}}}
	type gpuWant struct {
		enabled  bool
		profiles string
	}
	for _, tc := range []struct {
		name   string
		m      inventory.Machine
		f      *facts.Facts
		layout string
		want   []gpuWant
		err    string
	}{
		{"default layout", inventory.Machine{Name: "h"}, h100s, "all-balanced", []gpuWant{
			{true, "3g.40gb 2g.20gb 1g.10gb 1g.10gb"}, {true, "3g.40gb 2g.20gb 1g.10gb 1g.10gb"}, {true, "3g.40gb 2g.20gb 1g.10gb 1g.10gb"}}, ""},
		{"label rule", inventory.Machine{Name: "h", Labels: map[string]string{"pool": "inference"}}, h100s, "all-1g.10gb", []gpuWant{
			{true, strings.Repeat("1g.10gb ", 7)}, {true, strings.Repeat("1g.10gb ", 7)}, {true, strings.Repeat("1g.10gb ", 7)}}, ""},
		{"gpu rule", inventory.Machine{Name: "h"}, a100s, "all-3g.20gb", []gpuWant{{true, "3g.20gb 3g.20gb"}}, ""},
		{"site layout", inventory.Machine{Name: "h", MIG: "mixed"}, h100s, "mixed", []gpuWant{
			{true, "3g.40gb 1g.10gb 1g.10gb 1g.10gb 1g.10gb"}, {false, ""}, {true, "7g.80gb"}}, ""},
		{"site layout, some GPUs", inventory.Machine{Name: "h", MIG: "first"}, h100s, "first", []gpuWant{{true, "2g.20gb"}}, ""},
		{"disabled", inventory.Machine{Name: "h", MIG: "all-disabled"}, h100s, "all-disabled", []gpuWant{{false, ""}, {false, ""}, {false, ""}}, ""},
		{"no MIG GPU under the default", inventory.Machine{Name: "h"}, l40s, "all-balanced", nil, ""},
		{"too much", inventory.Machine{Name: "h", MIG: "too-much"}, h100s, "", nil, "GPU 0 (NVIDIA H100 80GB HBM3): MIG layout too-much (the host's mig): H100 80GB has 7 compute slices"},
		{"profile of another GPU", inventory.Machine{Name: "h", MIG: "all-3g.20gb"}, h100s, "", nil, "offers no profile 3g.20gb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hw, ok, err := mig.Resolve(spec, tc.m, tc.f, 580)
			if tc.err != "" {
				var me *mig.Error
				if err == nil || !errors.As(err, &me) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !ok {
				t.Fatalf("%v %v", ok, err)
			}
			if hw.Layout != tc.layout || len(hw.GPUs) != len(tc.want) {
				t.Fatalf("%+v, want layout %s and %d GPUs", hw, tc.layout, len(tc.want))
			}
			for i, w := range tc.want {
				g := hw.GPUs[i]
				if g.Enabled != w.enabled || strings.Join(g.Profiles, " ") != strings.TrimSpace(w.profiles) || len(g.IDs) != len(g.Profiles) {
					t.Errorf("GPU %d: %+v, want %+v", g.Index, g, w)
				}
			}
		})
	}
	if _, ok, _ := mig.Resolve(&inventory.Spec{}, inventory.Machine{}, h100s, 0); ok {
		t.Error("a layout without any MIG setting")
	}
}

func TestDiffers(t *testing.T) {
	on := gpu(0, h100, "Enabled")
	on.MIGDevices = []facts.MIGDevice{{Profile: "1g.10gb"}, {Profile: "3g.40gb"}}
	pending := gpu(0, a100, "Disabled")
	pending.MIGPending = "Enabled"
	for _, tc := range []struct {
		g    facts.GPU
		w    mig.Want
		want string
	}{
		{on, mig.Want{Enabled: true, Profiles: []string{"3g.40gb", "1g.10gb"}}, ""},
		{on, mig.Want{Enabled: true, Profiles: []string{"3g.40gb"}}, "instances 1g.10gb x1 + 3g.40gb x1, want 3g.40gb x1"},
		{on, mig.Want{Enabled: false}, "MIG mode Enabled, want Disabled"},
		{pending, mig.Want{Enabled: true}, "MIG mode Disabled, want Enabled"},
		{gpu(0, h100, "Disabled"), mig.Want{Enabled: false}, ""},
	} {
		if got := mig.Differs(tc.g, tc.w); got != tc.want {
			t.Errorf("Differs(%+v, %+v) = %q, want %q", tc.g, tc.w, got, tc.want)
		}
	}
}

// A DGX Station: four A100 80GB and a display GPU without MIG. A layout in
// mig-parted's shape picks each by its PCI device id (device-filter
// 0x20B210DE, 0x1FB010DE): the A100s get their instances, the display GPU
// stays as it is; asking MIG of the display GPU is refused.
func TestResolveDeviceFilter(t *testing.T) {
	no := false
	f := &facts.Facts{PCIGPUs: []facts.PCIDevice{{Address: "0000:01:00.0", DeviceID: "0x20b2"}, {Address: "0000:02:00.0", DeviceID: "0x1fb0"}}}
	f.GPUs = []facts.GPU{gpu(0, "NVIDIA A100-SXM4-80GB", "Disabled"), {Index: 1, Name: "NVIDIA T1000"}}
	f.GPUs[0].BusID, f.GPUs[1].BusID = "00000000:01:00.0", "00000000:02:00.0"
	spec := &inventory.Spec{}
	spec.NVIDIA.MIG.Layouts = map[string][]inventory.MIGGroup{
		"station": {
			{DeviceFilter: []string{"0x20B210DE"}, Profiles: map[string]int{"1g.10gb": 7}},
			{DeviceFilter: []string{"0x1FB010DE"}, Enabled: &no},
		},
		"bad": {{DeviceFilter: []string{"T1000"}, Profiles: map[string]int{"1g.10gb": 1}}},
	}
	hw, ok, err := mig.Resolve(spec, inventory.Machine{Name: "station", MIG: "station"}, f, 580)
	if err != nil || !ok || len(hw.GPUs) != 1 || hw.GPUs[0].Index != 0 || len(hw.GPUs[0].Profiles) != 7 || len(hw.Skipped) != 1 {
		t.Fatalf("station: %+v %v %v", hw, ok, err)
	}
	if _, _, err := mig.Resolve(spec, inventory.Machine{Name: "station", MIG: "bad"}, f, 580); err == nil || !strings.Contains(err.Error(), "GPU 1 (NVIDIA T1000)") {
		t.Errorf("MIG asked of the display GPU: %v", err)
	}
}
