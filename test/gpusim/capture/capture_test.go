package capture

import (
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
		"h100-80gb-hbm3__drv590.48.01": {"0000:00:09.0", 0x2330, 0x030200},
		"l40s__drv595.80":              {"0000:01:00.0", 0x26b9, 0x030200},
		"rtx-2080-super__drv610.57.04": {"0000:0c:00.0", 0x1e81, 0x030000},
		"rtx-4080-super__drv595.71.05": {"0000:01:00.0", 0x2702, 0x030000},
		"tesla-t4__drv515.105.01":      {"0000:00:1e.0", 0x1eb8, 0x030200}, // -q -x only
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
