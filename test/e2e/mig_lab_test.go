package e2e

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/gpukit/gpukit/internal/cli"
	"github.com/gpukit/gpukit/pkg/event"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/test/gpusim"
	"github.com/gpukit/gpukit/test/lab"
	"go.yaml.in/yaml/v3"
)

// withNVIDIA is a lab inventory with nvidia's fields (YAML) set in
// spec.nvidia and, per host, its own MIG layout (the host entry's mig);
// the file's own layout (indentation, flow or block) does not matter.
func withNVIDIA(t *testing.T, raw, name, nvidia string, hostMIG map[string]string) string {
	t.Helper()
	var doc map[string]any
	var fields map[string]any
	if err := yaml.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(nvidia), &fields); err != nil {
		t.Fatal(err)
	}
	spec, _ := doc["spec"].(map[string]any)
	n, _ := spec["nvidia"].(map[string]any)
	if n == nil {
		n = map[string]any{}
	}
	maps.Copy(n, fields)
	spec["nvidia"] = n
	hosts, _ := spec["hosts"].([]any)
	for _, h := range hosts {
		if e, ok := h.(map[string]any); ok && hostMIG[fmt.Sprint(e["name"])] != "" {
			e["mig"] = hostMIG[fmt.Sprint(e["name"])]
		}
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, name, string(b))
}

// withMIG is withNVIDIA with spec.nvidia.mig.
func withMIG(t *testing.T, raw, name, mig string, hostMIG map[string]string) string {
	t.Helper()
	return withNVIDIA(t, raw, name, "{mig: "+mig+"}", hostMIG)
}

// migDevices are a host's MIG devices' profiles as nvidia-smi -L lists them.
func migDevices(t *testing.T, l *lab.Lab, host string) string {
	t.Helper()
	return l.SSH(t, host, `nvidia-smi -L | awk '$1 == "MIG" {print $2}' | sort | paste -sd,`)
}

// MIG layouts from the inventory on two lab hosts with simulated H100s
// (test/gpusim: the stand-in nvidia-smi keeps MIG modes and instances with
// the real H100 -lgip's profiles; real systemd, real reboots): a layout the
// GPU cannot hold is refused by plan, naming host, GPU and why, before
// anything is installed; init installs the driver and applies each host's
// layout (lab-1 the default all-balanced, lab-2 its own); a second run
// changes nothing; after a real reboot the instances, which a GPU loses,
// are back, made by gpukit-mig.service under the host's systemd before
// anyone asked; a changed layout changes only its host. The Kubernetes
// phases are skipped (--skip-phases kubernetes,platform,kubeflow).
func TestLabMIG(t *testing.T) {
	lab.Require(t)
	t.Parallel()
	h100 := labCapture(t, "h100-80gb-hbm3__drv590.48.01")
	l, _, raw := gpuLab(t, map[string]gpusim.Hardware{"lab-1": {Capture: h100}, "lab-2": {Capture: h100}})
	const layouts = `{layout: all-balanced, layouts: {inference: [{profiles: {1g.10gb: 7}}], too-big: [{profiles: {4g.40gb: 1, 3g.40gb: 2}}]}}`
	skip := []string{"--skip-phases", "kubernetes,platform,kubeflow"}

	t.Run("plan refuses a layout the GPU cannot hold", func(t *testing.T) {
		inv := withMIG(t, raw, "too-big.yaml", layouts, map[string]string{"lab-2": "too-big"})
		r := runInit(t, append([]string{"plan", "-i", inv}, skip...)...)
		if r.code != cli.ExitHostsFailed || len(r.failed) != 1 || !strings.Contains(r.failed["lab-2"], nvidia.PhaseMIG) ||
			!strings.Contains(r.failed["lab-2"], "GPU 0") || !strings.Contains(r.failed["lab-2"], "has 7 compute slices; 4g.40gb x1 + 3g.40gb x2 take 10") {
			t.Errorf("exit %d, failed %v\n%s", r.code, r.failed, r.out)
		}
		if out := l.SSH(t, "lab-2", "dpkg-query -W nvidia-open 2>/dev/null || echo none"); out != "none" {
			t.Errorf("plan installed %q", out)
		}
	})

	inv := withMIG(t, raw, "mig.yaml", layouts, map[string]string{"lab-2": "inference"})
	t.Run("init applies each host's layout", func(t *testing.T) {
		r := runInit(t, append([]string{"init", "-i", inv}, skip...)...)
		if r.code != cli.ExitOK || r.counts != (event.HostCounts{Changed: 2}) {
			t.Fatalf("exit %d %+v %v\n%s", r.code, r.counts, r.failed, r.out)
		}
		start := map[string]time.Time{}
		for _, e := range r.events {
			if e.Phase != nvidia.PhaseMIG {
				continue
			}
			switch e.Type {
			case event.StepStart:
				start[e.Host] = e.Time
			case event.HostDone:
				t.Logf("%s: %s took %s", e.Host, nvidia.PhaseMIG, e.Time.Sub(start[e.Host]).Round(time.Millisecond))
			}
		}
		if got := migDevices(t, l, "lab-1"); got != "1g.10gb,1g.10gb,2g.20gb,3g.40gb" {
			t.Errorf("lab-1 (all-balanced): %q", got)
		}
		if got := migDevices(t, l, "lab-2"); got != strings.TrimSuffix(strings.Repeat("1g.10gb,", 7), ",") {
			t.Errorf("lab-2 (inference): %q", got)
		}
		if out := l.SSH(t, "lab-1", "systemctl is-enabled gpukit-mig.service; nvidia-smi mig -lgi | grep -c 'MIG '"); out != "enabled\n4" {
			t.Errorf("lab-1 unit and instances: %q", out)
		}
	})

	t.Run("second run changes nothing", func(t *testing.T) {
		r := runInit(t, append([]string{"init", "-i", inv}, skip...)...)
		if r.code != cli.ExitOK || r.counts != (event.HostCounts{Unchanged: 2}) || len(r.writeSteps()) != 0 {
			t.Errorf("exit %d %+v, writes %v", r.code, r.counts, r.writeSteps())
		}
	})

	t.Run("the layout is back after a real reboot", func(t *testing.T) {
		before := l.BootID(t, "lab-1")
		l.Reboot(t, "lab-1")
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
			out, err := l.SSHCommand("lab-1", "systemctl is-system-running --wait >/dev/null; cat /proc/sys/kernel/random/boot_id").Output()
			if err == nil && strings.TrimSpace(string(out)) != before {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("lab-1 did not come back within 2 min")
			}
		}
		if got := migDevices(t, l, "lab-1"); got != "1g.10gb,1g.10gb,2g.20gb,3g.40gb" {
			t.Errorf("lab-1 after the reboot: %q\n%s", got, l.SSH(t, "lab-1", "journalctl -b -u gpukit-mig --no-pager | tail -20"))
		}
		if out := l.SSH(t, "lab-1", "systemctl show -P ActiveState gpukit-mig.service; systemctl show -P Result gpukit-mig.service"); out != "active\nsuccess" {
			t.Errorf("gpukit-mig.service: %q", out)
		}
		r := runInit(t, append([]string{"init", "-i", inv}, skip...)...)
		if r.code != cli.ExitOK || r.counts.Changed != 0 {
			t.Errorf("after the reboot: exit %d %+v, writes %v", r.code, r.counts, r.writeSteps())
		}
	})

	t.Run("a changed layout changes only its host", func(t *testing.T) {
		changed := withMIG(t, raw, "disabled.yaml", layouts, map[string]string{"lab-2": "inference", "lab-1": "all-disabled"})
		r := runInit(t, append([]string{"init", "-i", changed}, skip...)...)
		if r.code != cli.ExitOK || r.counts != (event.HostCounts{Changed: 1, Unchanged: 1}) {
			t.Errorf("exit %d %+v %v", r.code, r.counts, r.failed)
		}
		if out := l.SSH(t, "lab-1", "nvidia-smi --query-gpu=mig.mode.current --format=csv,noheader"); out != "Disabled" {
			t.Errorf("lab-1 MIG mode %q", out)
		}
	})
}
