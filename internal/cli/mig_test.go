package cli

import (
	"strings"
	"testing"
)

// gpukit mig apply checks its input before any host: a layout that is not
// one, with the file, line and field (exit 2); flags that contradict.
func TestMIGApplyInput(t *testing.T) {
	isolate(t)
	bad := writeFile(t, "bad.yaml", `apiVersion: gpukit.dev/v1alpha1
kind: Cluster
metadata: {name: t}
spec:
  hosts:
    - {name: cp-1, address: 127.0.0.2, roles: [control-plane]}
    - {name: gpu-1, address: 127.0.0.3, roles: [worker], mig: inferense}
`)
	code, _, errOut := run(t, "mig", "apply", "-i", bad, "--dry-run")
	if code != ExitUsage || !strings.Contains(errOut, "bad.yaml:7:") || !strings.Contains(errOut, `spec.hosts[1].mig: unknown MIG layout "inferense"`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
	code, _, errOut = run(t, "mig", "apply", "-i", bad, "--dry-run", "--resume")
	if code != ExitUsage || !strings.Contains(errOut, "--resume and --dry-run") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	code, _, errOut = run(t, "mig", "apply", "-i", bad, "--max-unavailable", "0%")
	if code != ExitUsage || !strings.Contains(errOut, "--max-unavailable") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}
