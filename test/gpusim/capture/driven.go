package capture

import (
	"fmt"
	"strings"

	"github.com/gpukit/gpukit/pkg/compat"
)

// Driven splits gpus into those the kernel module of driver (a version,
// "590.48.01") drives and those it ignores, as the real module does at
// load: a GPU whose generation the driver's branch dropped (a Kepler GPU
// after 470, a Volta after 580) or predates is not initialised, though the
// PCI bus still shows it. The generations are pkg/compat's table (by PCI
// device id, else product name); a GPU the table does not know (newer than
// it) is driven. The driven GPUs are numbered again from 0, as nvidia-smi
// numbers the GPUs it lists.
//
// nvrm is what the module logs meanwhile (dmesg): a message for each
// ignored GPU and, when it drives none, that it found none - the module
// then fails to load ("No such device"), which is why nvidia-smi on such a
// host cannot talk to a driver rather than list no GPU
// (open-gpu-kernel-modules, kernel-open/nvidia/nv.c, nvidia_init_module:
// "No NVIDIA GPU found." and -ENODEV when no GPU is left; the same for
// "None of the NVIDIA devices were initialized.").
func Driven(gpus []GPU, driver string) (driven, ignored []GPU, nvrm string) {
	d, err := compat.ParseDriver(driver)
	if err != nil {
		return renumber(gpus), nil, ""
	}
	var log strings.Builder
	legacy := 0
	for _, g := range gpus {
		a, known := compat.Recognize(fmt.Sprintf("0x%04x", g.Device()), g.Name)
		if !known || a.SupportsBranch(d.Branch) == nil {
			driven = append(driven, g)
			continue
		}
		ignored = append(ignored, g)
		if a.LastBranch != 0 && d.Branch > a.LastBranch {
			// the legacy message of NVIDIA's proprietary module
			legacy++
			fmt.Fprintf(&log, "NVRM: The NVIDIA %s GPU installed in this system is\n"+
				"NVRM:  supported through the NVIDIA %d.xx Legacy drivers. Please\n"+
				"NVRM:  visit http://www.nvidia.com/object/unix.html for more\n"+
				"NVRM:  information.  The %s NVIDIA driver will ignore\n"+
				"NVRM:  this GPU.  Continuing probe...\n", strings.TrimPrefix(g.Name, "NVIDIA "), a.LastBranch, driver)
			continue
		}
		// osapi.c rm_is_supported_device: a GPU newer than the driver
		fmt.Fprintf(&log, "NVRM: The NVIDIA GPU %s (PCI ID: 10de:%04x)\n"+
			"NVRM: installed in this system is not supported by the\n"+
			"NVRM: NVIDIA %s driver release.\n"+
			"NVRM: Please see 'Appendix A - Supported NVIDIA GPU Products'\n"+
			"NVRM: in this release's README, available on the operating system\n"+
			"NVRM: specific graphics driver download page at www.nvidia.com.\n", g.PCIAddress(), g.Device(), driver)
	}
	switch {
	case len(driven) > 0 || len(ignored) == 0:
	case legacy == len(ignored):
		log.WriteString("NVRM: No NVIDIA GPU found.\n")
	default:
		log.WriteString("NVRM: None of the NVIDIA devices were initialized.\n")
	}
	return renumber(driven), ignored, log.String()
}

func renumber(gpus []GPU) []GPU {
	out := make([]GPU, len(gpus))
	for i, g := range gpus {
		g.Index = i
		out[i] = g
	}
	return out
}
