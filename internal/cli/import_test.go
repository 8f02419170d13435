package cli

import (
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// KubeKey v4 Inventories convert; files that are some other tool's (or
// gpukit's own) are refused with exit 2, saying what they are, where.
func TestImportKubeKey(t *testing.T) {
	// A KubeKey v4 Inventory (kubekey.kubesphere.io/v1, kind Inventory; see
	// pkg/inventory/ansible/testdata/kubekey for where the format is defined).
	v4 := writeFile(t, "inventory.yaml", `apiVersion: kubekey.kubesphere.io/v1
kind: Inventory
metadata:
  name: lab
spec:
  hosts:
    cp1: {connector: {host: 10.0.0.1, user: ubuntu, password: not-in-output}}
    gpu1: {connector: {host: 10.0.0.2, user: ubuntu, password: not-in-output, private_key: ~/.ssh/id_ed25519}}
  groups:
    kube_control_plane: {hosts: [cp1]}
    kube_worker: {hosts: [gpu1]}
`)
	v3 := writeFile(t, "config-sample.yaml", "apiVersion: kubekey.kubesphere.io/v1alpha2\nkind: Cluster\nspec:\n  hosts: []\n")
	k0sctl := writeFile(t, "k0sctl.yaml", "apiVersion: k0sctl.k0sproject.io/v1beta1\nkind: Cluster\nspec:\n  hosts: []\n")
	gpukit := writeFile(t, "cluster.yaml", string(inventory.Example()))
	ini := writeFile(t, "hosts.ini", "[kube_control_plane]\ncp1 ansible_host=10.0.0.1\n")
	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		stdout    string // a fragment of stdout
		stderr    string // a fragment of stderr
		notStdout string
	}{
		{"v4 with --from ansible", []string{"--from", "ansible", v4}, ExitOK, "name: lab", "is the sudo password too", "not-in-output"},
		{"v4 with --from kubekey", []string{"--from", "kubekey", v4}, ExitOK, "roles: [worker]", "GPUKIT_SSH_PASSWORD", "not-in-output"},
		{"--from kubekey wants a KubeKey Inventory", []string{"--from", "kubekey", ini}, ExitUsage, "", "not a KubeKey v4 Inventory", "apiVersion"},
		{"KubeKey v3", []string{"--from", "kubekey", v3}, ExitUsage, "",
			v3 + ":1: this is a KubeKey v3 Cluster (kubekey.kubesphere.io/v1alpha2): not supported", "apiVersion"},
		{"k0sctl", []string{"--from", "ansible", k0sctl}, ExitUsage, "", k0sctl + ":1: this is a k0sctl cluster file", "apiVersion"},
		{"a gpukit inventory", []string{"--from", "ansible", gpukit}, ExitUsage, "", "this is already a gpukit inventory", "apiVersion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"inventory", "import"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) || strings.Contains(out, tc.notStdout) {
				t.Errorf("exit %d (want %d), stdout wants %q and not %q, stderr wants %q:\n%s\n%s",
					code, tc.code, tc.stdout, tc.notStdout, tc.stderr, out, errOut)
			}
		})
	}
}
