package facts_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/test/fixtures"
)

func readCapture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures.Dir(t, "nvidia-smi"), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The real -lgip of four H100 SXM5 80GB, MIG just enabled: seven profiles a
// GPU, every instance free.
func TestParseMIGProfilesRealCapture(t *testing.T) {
	ps, err := facts.ParseMIGProfiles(readCapture(t, "h100-80gb-hbm3__mig-lgip.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 28 {
		t.Fatalf("%d profiles, want 7 on each of 4 GPUs", len(ps))
	}
	want := []facts.MIGProfile{
		{GPU: 0, Name: "1g.10gb", ID: 19, Free: 7, Total: 7, MemGiB: 9.75, SMs: 16},
		{GPU: 0, Name: "1g.10gb+me", ID: 20, Free: 1, Total: 1, MemGiB: 9.75, SMs: 16},
		{GPU: 0, Name: "1g.20gb", ID: 15, Free: 4, Total: 4, MemGiB: 19.62, SMs: 26},
		{GPU: 0, Name: "2g.20gb", ID: 14, Free: 3, Total: 3, MemGiB: 19.62, SMs: 32},
		{GPU: 0, Name: "3g.40gb", ID: 9, Free: 2, Total: 2, MemGiB: 39.5, SMs: 60},
		{GPU: 0, Name: "4g.40gb", ID: 5, Free: 1, Total: 1, MemGiB: 39.5, SMs: 64},
		{GPU: 0, Name: "7g.80gb", ID: 0, Free: 1, Total: 1, MemGiB: 79.25, SMs: 132},
	}
	for i, w := range want {
		if ps[i] != w {
			t.Errorf("profile %d = %+v, want %+v", i, ps[i], w)
		}
	}
	if last := ps[27]; last.GPU != 3 || last.Name != "7g.80gb" {
		t.Errorf("last profile %+v, want GPU 3's 7g.80gb", last)
	}
	f := &facts.Facts{MIG: ps}
	if got := len(f.MIGProfiles(2)); got != 7 {
		t.Errorf("GPU 2 has %d profiles, want 7", got)
	}
}

func TestParseMIGProfilesLayouts(t *testing.T) {
	// R570 and later print the Name column two wider (81 columns).
	wide := `+-------------------------------------------------------------------------------+
| GPU instance profiles:                                                        |
| GPU   Name               ID    Instances   Memory     P2P    SM    DEC   ENC  |
|                                Free/Total   GiB              CE    JPEG  OFA  |
|===============================================================================|
|   0  MIG 1g.5gb          19     3/7        4.75       No     14     0     0   |
|                                                               1     0     0   |
+-------------------------------------------------------------------------------+
`
	for _, tc := range []struct {
		name, out string
		want      int
		err       string
	}{
		{name: "81 columns", out: wide, want: 1},
		{name: "no MIG GPU", out: "No MIG-enabled devices found.\n", want: 0},
		{name: "empty", out: "", want: 0},
		{name: "garbage", out: "Failed to initialize NVML: Unknown Error\n", err: "no profile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := facts.ParseMIGProfiles(tc.out)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(ps) != tc.want {
				t.Fatalf("%d profiles, %v; want %d", len(ps), err, tc.want)
			}
			if tc.want == 1 && (ps[0].Free != 3 || ps[0].Total != 7 || ps[0].Name != "1g.5gb") {
				t.Errorf("%+v", ps[0])
			}
		})
	}
}

// Real -L listings, old (R450: "MIG 1g.5gb Device 0:") and new (aligned).
func TestParseMIGDevicesRealCaptures(t *testing.T) {
	for _, tc := range []struct {
		file string
		want map[int][]string
	}{
		{"a100-sxm4-40gb-mig-1g.5gb-x7__drv450__list-L.txt", map[int][]string{0: {"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"}}},
		{"a100-sxm4-40gb-mig-mixed__drv450__list-L.txt", map[int][]string{0: {"3g.20gb", "2g.10gb", "1g.5gb"}}},
		{"h100-80gb-hbm3-mig-mixed__list-L.txt", map[int][]string{0: {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}}},
		{"h100-80gb-hbm3__drv590.48.01__list-L.txt", map[int][]string{}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			devs, err := facts.ParseMIGDevices(readCapture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got := map[int][]string{}
			for gpu, ds := range devs {
				for _, d := range ds {
					got[gpu] = append(got[gpu], d.Profile)
					if !strings.HasPrefix(d.UUID, "MIG-") {
						t.Errorf("GPU %d: uuid %q", gpu, d.UUID)
					}
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for gpu, w := range tc.want {
				if strings.Join(got[gpu], " ") != strings.Join(w, " ") {
					t.Errorf("GPU %d: %v, want %v", gpu, got[gpu], w)
				}
			}
		})
	}
}

// The probe's MIG lines reach the GPUs they belong to.
func TestParseProbeMIG(t *testing.T) {
	var b strings.Builder
	b.WriteString("nvidia_smi.gpu=0, GPU-a, NVIDIA H100 80GB HBM3, 81559, 590.48.01, Enabled, Enabled, 00000000:06:00.0, Enabled\n")
	b.WriteString("nvidia_smi.gpu=1, GPU-b, NVIDIA H100 80GB HBM3, 81559, 590.48.01, Disabled, Enabled, 00000000:0C:00.0, Enabled\n")
	for _, l := range strings.Split(strings.TrimSpace(readCapture(t, "h100-80gb-hbm3-mig-mixed__list-L.txt")), "\n") {
		b.WriteString("nvidia_smi.list=" + l + "\n")
	}
	b.WriteString("nvidia_smi.list=GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-b)\n")
	for _, l := range strings.Split(readCapture(t, "h100-80gb-hbm3__mig-lgip.txt"), "\n") {
		b.WriteString("nvidia_smi.lgip=" + l + "\n")
	}
	f, err := facts.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	g0, g1 := f.GPUs[0], f.GPUs[1]
	if !g0.MIGEnabled() || g0.MIGPendingChange() || len(g0.MIGDevices) != 4 {
		t.Errorf("GPU 0: %+v", g0)
	}
	if g1.MIGEnabled() || !g1.MIGPendingChange() || !g1.MIGCapable() || len(g1.MIGDevices) != 0 {
		t.Errorf("GPU 1: %+v", g1)
	}
	if len(f.MIG) != 28 {
		t.Errorf("%d profiles", len(f.MIG))
	}
}
