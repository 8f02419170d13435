package scriptsim

import (
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// gpukit's rendered MIG install on a simulated H100 host: MIG on, the
// instances from the real -lgip's profile ids; a reboot keeps the mode,
// loses the instances, and the boot unit makes them again; a GPU model
// without a -lgip capture has no MIG.
func TestMIGInstallAndBoot(t *testing.T) {
	script, err := scripts.MIGScript(scripts.MIGParams{Units: scripts.GPUConsumerUnits, GPUs: []scripts.MIGGPU{
		{Index: 0, Enabled: true, Profiles: []string{"4g.40gb", "2g.20gb", "1g.10gb"}, IDs: []int{5, 14, 19}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := scripts.MIGInstall(scripts.MIGInstallParams{Script: script, Unit: scripts.MIGUnit})
	if err != nil {
		t.Fatal(err)
	}
	h := Installed("590.48.01", 1)
	if _, err := h.Run("h", cmd); err != nil {
		t.Fatal(err)
	}
	g := h.MIG.GPUs[0]
	if g == nil || g.Mode != "Enabled" || strings.Join(Devices(g), ",") != "4g.40gb,2g.20gb,1g.10gb" || h.MIG.Script != script || !h.MIG.Unit {
		t.Fatalf("after the install: %+v %+v", g, h.MIG)
	}
	res, err := h.Run("h", ssh.Command{Name: "nvidia state", Script: "nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version,mig.mode.current,persistence_mode,pci.bus_id,mig.mode.pending --format=csv"})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout)
	for _, want := range []string{", Enabled, ", "smi.list=  MIG 4g.40gb", "smi.lgip=|   0  MIG 7g.80gb", "mig.script=", "mig.unit=enabled"} {
		if !strings.Contains(out, want) {
			t.Errorf("nvidia state lacks %q:\n%s", want, out)
		}
	}
	h.MIG.GPUs[0].Instances = h.MIG.GPUs[0].Instances[:1] // someone changed it by hand
	h.boot()
	if g := h.MIG.GPUs[0]; g.Mode != "Enabled" || strings.Join(Devices(g), ",") != "4g.40gb,2g.20gb,1g.10gb" {
		t.Errorf("after a boot: %+v", g)
	}
	h.MIG.Unit = false
	h.boot()
	if g := h.MIG.GPUs[0]; g.Mode != "Enabled" || len(g.Instances) != 0 {
		t.Errorf("after a boot without the unit: %+v", g)
	}

	l40s := Installed("590.48.01", 1)
	l40s.Capture = "l40s__drv595.80"
	if _, err := l40s.Run("h", cmd); err == nil || !strings.Contains(err.Error(), "Not Supported") {
		t.Errorf("MIG on an L40S: %v", err)
	}
}
