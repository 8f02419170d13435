package capture

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/test/fixtures"
)

func TestGPUsOfEveryCapture(t *testing.T) {
	dir := fixtures.Dir(t, "nvidia-smi")
	want := map[string]struct {
		addr   string
		device uint16
		class  uint32
	}{
		"h100-80gb-hbm3__drv590.48.01":     {"0000:00:09.0", 0x2330, 0x030200},
		"l40s__drv595.80":                  {"0000:01:00.0", 0x26b9, 0x030200},
		"rtx-2080-super__drv610.57.04":     {"0000:0c:00.0", 0x1e81, 0x030000},
		"rtx-4080-super__drv595.71.05":     {"0000:01:00.0", 0x2702, 0x030000},
		"tesla-t4__drv515.105.01":          {"0000:00:1e.0", 0x1eb8, 0x030200}, // -q -x only
		"a100-sxm4-80gb-mig__drv535.54.03": {"0000:01:00.0", 0x20b2, 0x030200},
		"rtx-3090__drv525.147.05":          {"0000:00:10.0", 0, 0x030000}, // the report hides its PCI ids
	}
	for name, w := range want {
		c := Capture{Prefix: dir + "/" + name}
		gpus, err := c.GPUs()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(gpus) != 1 || gpus[0].PCIAddress() != w.addr || gpus[0].Device() != w.device || gpus[0].Class != w.class {
			t.Errorf("%s: %+v (address %s), want %+v", name, gpus, gpus[0].PCIAddress(), w)
		}
	}
	if d := (Capture{Prefix: dir + "/a100-sxm4-40gb__drv450.80.02"}).RecordedDriver(); d != "450.80.02" {
		t.Errorf("table-only capture: driver %q", d)
	}
}

func TestReplaySwitchesPersistenceInEveryForm(t *testing.T) {
	dir := fixtures.Dir(t, "nvidia-smi")
	l40s := Capture{Prefix: dir + "/l40s__drv595.80"} // recorded with persistence off
	table, err := l40s.Replay(KindTable, Live{Persistence: "Enabled"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(table), "|   0  NVIDIA L40S                    On  |") {
		t.Errorf("table:\n%s", table)
	}
	q, _ := l40s.Replay(KindQuery, Live{Persistence: "Enabled"})
	if !strings.Contains(string(q), "Persistence Mode                                   : Enabled") {
		t.Error("-q keeps persistence mode Disabled")
	}
	t4 := Capture{Prefix: dir + "/tesla-t4__drv515.105.01"}
	x, err := t4.Replay(KindQueryXML, Live{Driver: "580.95.05", CUDA: "13.0", Persistence: "Enabled"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<driver_version>580.95.05</driver_version>", "<cuda_version>13.0</cuda_version>", "<persistence_mode>Enabled</persistence_mode>"} {
		if !strings.Contains(string(x), want) {
			t.Errorf("-q -x lacks %s", want)
		}
	}
	if strings.Contains(string(x), "515.105.01") {
		t.Error("-q -x still shows the recorded driver")
	}
	old := Capture{Prefix: dir + "/a100-sxm4-40gb__drv450.80.02"}
	tb, _ := old.Replay(KindTable, Live{Driver: "580.95.05", Persistence: "Enabled"})
	if !strings.Contains(string(tb), "A100-SXM4-40GB      On   |") || !strings.Contains(string(tb), "Driver Version: 580.95.05 ") {
		t.Errorf("old table format:\n%s", tb)
	}
}

// gpukit's probe fields (pkg/facts GPUQueryFields), which this package
// cannot import (pkg/facts' tests import it).
var probeFields = []string{"index", "uuid", "name", "memory.total", "driver_version", "mig.mode.current", "persistence_mode", "pci.bus_id"}

// A -q -x report alone (most public reports are only that) stands up a GPU
// model: the probe's rows, -L and the PCI bus come from it, and -q replays
// it.
func TestXMLReportAloneStandsUpAModel(t *testing.T) {
	dir := fixtures.Dir(t, "nvidia-smi")
	for _, tc := range []struct {
		name, row, list string
		addr            string
		device          uint16
		class           uint32
	}{
		{"tesla-t4__drv515.105.01", "0, GPU-d37e67a5-91dd-3774-a5cb-99096249601a, Tesla T4, 15360, 515.105.01, [N/A], Disabled, 00000000:00:1E.0",
			"GPU 0: Tesla T4 (UUID: GPU-d37e67a5-91dd-3774-a5cb-99096249601a)", "0000:00:1e.0", 0x1eb8, 0x030200},
		// the report hides its PCI ids ([REDACTED]): the GPU is known by its name
		{"rtx-3090__drv525.147.05", "0, GPU-12345678-aaaa-bbbb-cccc-0123456789ab, NVIDIA GeForce RTX 3090, 24576, 525.147.05, [N/A], Enabled, 00000000:00:10.0",
			"GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-12345678-aaaa-bbbb-cccc-0123456789ab)", "0000:00:10.0", 0, 0x030000},
		// MIG on: the GPU's memory, not its MIG devices'
		{"a100-sxm4-80gb-mig__drv535.54.03", "0, GPU-513536b6-7d19-9063-b049-1e69664bb298, NVIDIA A100-SXM4-80GB, 81920, 535.54.03, Enabled, Disabled, 00000000:01:00.0",
			"GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-513536b6-7d19-9063-b049-1e69664bb298)", "0000:01:00.0", 0x20b2, 0x030200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Capture{Prefix: dir + "/" + tc.name}
			row, err := c.QueryGPU(probeFields, "csv,noheader,nounits")
			if err != nil || row != tc.row+"\n" {
				t.Errorf("--query-gpu: %q %v, want %q", row, err, tc.row)
			}
			if l, err := c.Replay(KindList, Live{}); err != nil || string(l) != tc.list+"\n" {
				t.Errorf("-L: %q %v", l, err)
			}
			q, err := c.Replay(KindQuery, Live{Driver: "580.95.05"})
			if err != nil || !strings.Contains(string(q), "<driver_version>580.95.05</driver_version>") {
				t.Errorf("-q replays the -q -x report: %v", err)
			}
			gpus, err := c.GPUs()
			if err != nil || len(gpus) != 1 || gpus[0].PCIAddress() != tc.addr || gpus[0].Device() != tc.device || gpus[0].Class != tc.class {
				t.Errorf("GPUs %+v %v", gpus, err)
			}
		})
	}
	all, err := All(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tesla-t4__drv515.105.01", "rtx-3090__drv525.147.05", "a100-sxm4-80gb-mig__drv535.54.03", "h100-80gb-hbm3__drv590.48.01"} {
		if !slices.Contains(all, Capture{Prefix: dir + "/" + name}) {
			t.Errorf("All lacks %s", name)
		}
	}
}

// A -q text report alone answers what the rows recorded in the same
// session say: each text capture, copied without its other recordings.
func TestTextReportAloneAgreesWithRecordedRows(t *testing.T) {
	dir := fixtures.Dir(t, "nvidia-smi")
	all, err := All(dir)
	if err != nil {
		t.Fatal(err)
	}
	fields := append(slices.Clone(probeFields), "pci.device_id", "pci.sub_device_id", "mig.mode.pending", "serial", "vbios_version")
	compared := 0
	for _, full := range all {
		text, err := full.Raw(KindQuery)
		if err != nil {
			continue
		}
		if _, err := full.Raw(KindQueryGPU); err != nil {
			continue
		}
		compared++
		t.Run(filepath.Base(full.Prefix), func(t *testing.T) {
			alone := Capture{Prefix: filepath.Join(t.TempDir(), filepath.Base(full.Prefix))}
			if err := os.WriteFile(alone.Prefix+"__q.txt", text, 0o644); err != nil {
				t.Fatal(err)
			}
			want, err := full.QueryGPU(fields, "csv")
			if err != nil {
				t.Fatal(err)
			}
			got, err := alone.QueryGPU(fields, "csv")
			if err != nil || got != want {
				t.Errorf("from -q alone:\n%s%v\nrecorded:\n%s", got, err, want)
			}
			recorded, _ := full.Replay(KindList, Live{})
			var gpuLines []string
			for _, l := range strings.SplitAfter(string(recorded), "\n") {
				if strings.HasPrefix(l, "GPU ") {
					gpuLines = append(gpuLines, l)
				}
			}
			if l, err := alone.Replay(KindList, Live{}); err != nil || string(l) != strings.Join(gpuLines, "") {
				t.Errorf("-L from -q alone %q %v, recorded %q", l, err, recorded)
			}
		})
	}
	if compared == 0 {
		t.Fatal("no capture with both -q and --query-gpu recordings")
	}
}

// Which GPUs a driver drives: pkg/compat's generations, by device id,
// else by name; a GPU the table does not know is driven.
func TestDriven(t *testing.T) {
	t4 := GPU{Name: "Tesla T4", BusID: "00000000:00:1E.0", DeviceID: 0x1eb810de}
	k80 := GPU{Name: "Tesla K80", BusID: "00000000:00:1D.0", DeviceID: 0x102d10de}
	v100 := GPU{Name: "Tesla V100-SXM2-16GB", BusID: "00000000:00:1C.0", DeviceID: 0x1db110de}
	h100 := GPU{Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:00:09.0", DeviceID: 0x233010de}
	unknown := GPU{Name: "NVIDIA Some Future GPU", BusID: "00000000:00:0A.0", DeviceID: 0x3f0010de}
	byName := GPU{Name: "NVIDIA GeForce RTX 3090", BusID: "00000000:00:10.0"} // id hidden: Ampere by name
	for _, tc := range []struct {
		name    string
		gpus    []GPU
		driver  string
		driven  []string // bus ids, in nvidia-smi's new order
		logHas  []string
		logNone bool
	}{
		{"Kepler after 470", []GPU{k80}, "590.48.01", nil,
			[]string{"NVRM: The NVIDIA Tesla K80 GPU installed in this system is\n", "NVIDIA 470.xx Legacy drivers", "The 590.48.01 NVIDIA driver will ignore", "NVRM: No NVIDIA GPU found.\n"}, false},
		{"Kepler on 470", []GPU{k80}, "470.256.02", []string{k80.BusID}, nil, true},
		{"Volta on 580", []GPU{v100}, "580.95.05", []string{v100.BusID}, nil, true},
		{"Volta after 580", []GPU{v100}, "590.48.01", nil, []string{"580.xx Legacy", "No NVIDIA GPU found."}, false},
		{"mixed: the others listed, numbered again", []GPU{k80, t4}, "590.48.01", []string{t4.BusID}, []string{"Tesla K80"}, false},
		{"Hopper before its first branch", []GPU{h100}, "470.256.02", nil,
			[]string{"(PCI ID: 10de:2330)", "NVIDIA 470.256.02 driver release", "None of the NVIDIA devices were initialized."}, false},
		{"a GPU newer than the table", []GPU{unknown}, "590.48.01", []string{unknown.BusID}, nil, true},
		{"a hidden device id", []GPU{byName}, "470.256.02", []string{byName.BusID}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			driven, ignored, nvrm := Driven(tc.gpus, tc.driver)
			var got []string
			for i, g := range driven {
				got = append(got, g.BusID)
				if g.Index != i {
					t.Errorf("driven GPU %s has index %d, want %d", g.BusID, g.Index, i)
				}
			}
			if !slices.Equal(got, tc.driven) || len(driven)+len(ignored) != len(tc.gpus) {
				t.Errorf("driven %v, ignored %+v", got, ignored)
			}
			for _, want := range tc.logHas {
				if !strings.Contains(nvrm, want) {
					t.Errorf("kernel log lacks %q:\n%s", want, nvrm)
				}
			}
			if tc.logNone != (nvrm == "") {
				t.Errorf("kernel log:\n%s", nvrm)
			}
		})
	}
}

// GPUs the loaded driver does not drive are out of every listing but the
// table; the others are numbered from 0.
func TestReplayHidesGPUsTheDriverIgnores(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(fixtures.Dir(t, "nvidia-smi"), "tesla-t4__drv515.105.01__q-x.xml"))
	if err != nil {
		t.Fatal(err)
	}
	// A hand-made variant of a real report: a second GPU, a Tesla K80, in
	// front of the T4 (a copy of its section with another bus id, name and
	// device id), and two attached GPUs.
	x := string(src)
	start, end := strings.Index(x, `<gpu id=`), strings.Index(x, "</gpu>")+len("</gpu>")
	k80 := strings.NewReplacer(`00000000:00:1E.0`, `00000000:00:1D.0`, "Tesla T4", "Tesla K80", "1EB810DE", "102D10DE",
		"GPU-d37e67a5-91dd-3774-a5cb-99096249601a", "GPU-0000000a-91dd-3774-a5cb-99096249601a").Replace(x[start:end])
	x = strings.Replace(x[:start]+k80+"\n    "+x[start:], "<attached_gpus>1<", "<attached_gpus>2<", 1)
	c := Capture{Prefix: filepath.Join(t.TempDir(), "k80-t4__drv515.105.01")}
	if err := os.WriteFile(c.Prefix+"__q-x.xml", []byte(x), 0o644); err != nil {
		t.Fatal(err)
	}
	gpus, err := c.GPUs()
	if err != nil || len(gpus) != 2 {
		t.Fatal(gpus, err)
	}
	driven, ignored, _ := Driven(gpus, "590.48.01")
	if len(driven) != 1 || len(ignored) != 1 || ignored[0].Name != "Tesla K80" {
		t.Fatalf("driven %+v ignored %+v", driven, ignored)
	}
	live := Live{Driver: "590.48.01", Hidden: []string{ignored[0].BusID}}
	rows, err := c.ReplayQueryGPU(probeFields, "csv,noheader,nounits", live)
	if err != nil || rows != "0, GPU-d37e67a5-91dd-3774-a5cb-99096249601a, Tesla T4, 15360, 590.48.01, [N/A], Disabled, 00000000:00:1E.0\n" {
		t.Errorf("rows %q %v", rows, err)
	}
	if l, _ := c.Replay(KindList, live); string(l) != "GPU 0: Tesla T4 (UUID: GPU-d37e67a5-91dd-3774-a5cb-99096249601a)\n" {
		t.Errorf("-L %q", l)
	}
	q, _ := c.Replay(KindQueryXML, live)
	if strings.Count(string(q), "<gpu id=") != 1 || strings.Contains(string(q), "Tesla K80") || !strings.Contains(string(q), "<attached_gpus>1</attached_gpus>") ||
		!strings.HasSuffix(strings.TrimSpace(string(q)), "</nvidia_smi_log>") {
		t.Errorf("-q -x:\n%s", q)
	}
	if all, _ := c.ReplayQueryGPU([]string{"index", "name"}, "csv,noheader", Live{}); all != "0, Tesla K80\n1, Tesla T4\n" {
		t.Errorf("nothing hidden: %q", all)
	}
}
