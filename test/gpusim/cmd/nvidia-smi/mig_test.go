package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/scripts"
	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/gpusim/hoststate"
)

// The test binary is the stand-in too (a symlink named nvidia-smi on PATH),
// so that gpukit's rendered scripts run against it.
func TestMain(m *testing.M) {
	if root, ok := os.LookupEnv("GPUSIM_TEST_SMI_ROOT"); ok && filepath.Base(os.Args[0]) == "nvidia-smi" {
		os.Exit(run(hoststate.Host{Root: root}, os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func migHost(t *testing.T) fakeHost {
	t.Helper()
	h := newHost(t, "h100-80gb-hbm3__drv590.48.01")
	b, err := os.ReadFile(filepath.Join(fixtures.Dir(t, "nvidia-smi"), "h100-80gb-hbm3__mig-lgip.txt"))
	if err != nil {
		t.Fatal(err)
	}
	h.write("/usr/share/gpusim/captures/h100-80gb-hbm3__mig-lgip.txt", string(b))
	h.library("590.48.01")
	h.loaded("590.48.01", "open")
	h.write(hoststate.BootIDFile, "boot-1\n")
	return h
}

func expect(t *testing.T, h fakeHost, code int, want string, args ...string) string {
	t.Helper()
	got, out := h.smi(args...)
	if got != code || !strings.Contains(out, want) {
		t.Fatalf("nvidia-smi %s: exit %d, want %d with %q:\n%s", strings.Join(args, " "), got, code, want, out)
	}
	return out
}

// A Hopper GPU: the mode changes at once; instances go where real A100
// sessions put them (a 3g first at slice 4), -lgip counts what is left
// with the real capture's rows, -L lists the MIG devices, a GPU instance
// with a compute instance is not destroyed, a reboot keeps the mode and
// loses the instances.
func TestMIGHopper(t *testing.T) {
	h := migHost(t)
	expect(t, h, exitNotFound, "No MIG-enabled devices found.", "mig", "-lgip")
	expect(t, h, 0, "Enabled MIG Mode for GPU 00000000", "-i", "0", "-mig", "1")
	expect(t, h, 0, "0, Enabled, Enabled", "-i", "0", "--query-gpu=index,mig.mode.current,mig.mode.pending", "--format=csv,noheader")
	out := expect(t, h, 0, "|   0  MIG 1g.10gb       19     7/7", "mig", "-lgip")
	if strings.Count(out, "MIG 1g.10gb ") != 1 {
		t.Errorf("-lgip of one GPU with MIG on:\n%s", out)
	}
	expect(t, h, 0, "Successfully created GPU instance ID  1 on GPU  0 using profile MIG 3g.40gb (ID  9)", "mig", "-i", "0", "-cgi", "9", "-C")
	expect(t, h, 0, "|   0  MIG 3g.40gb          9        1          4:4     |", "mig", "-i", "0", "-lgi")
	expect(t, h, 0, "|   0  MIG 4g.40gb        5     1/1", "mig", "-lgip")
	expect(t, h, 0, "|   0  MIG 2g.20gb       14     2/3", "mig", "-lgip")
	expect(t, h, 0, "created compute instance", "mig", "-i", "0", "-cgi", "2g.20gb,19,19", "-C")
	out = expect(t, h, 0, "  MIG 3g.40gb     Device  0: (UUID: MIG-", "-L")
	if strings.Count(out, "  MIG ") != 4 {
		t.Errorf("-L:\n%s", out)
	}
	expect(t, h, exitInsufficient, "Insufficient Resources", "mig", "-i", "0", "-cgi", "19")
	expect(t, h, exitInUse, "In use by another client", "mig", "-i", "0", "-dgi")
	expect(t, h, 0, "Successfully destroyed compute instance", "mig", "-i", "0", "-dci")
	expect(t, h, 0, "Successfully destroyed GPU instance", "mig", "-i", "0", "-dgi")
	expect(t, h, exitNotFound, "No GPU instances found", "mig", "-i", "0", "-lgi")
	expect(t, h, 0, "Successfully created", "mig", "-i", "0", "-cgi", "19", "-C")
	h.write(hoststate.BootIDFile, "boot-2\n")
	expect(t, h, exitNotFound, "No GPU instances found", "mig", "-i", "0", "-lgi")
	expect(t, h, 0, "0, Enabled", "--query-gpu=index,mig.mode.current", "--format=csv,noheader")
}

// With MIG changes waiting for a reset (Ampere), the mode is pending until
// the GPU is reset, which fails while the persistence daemon holds it.
func TestMIGNeedsReset(t *testing.T) {
	h := migHost(t)
	h.write(hoststate.MIGNeedsResetFile, "")
	expect(t, h, 0, "Warning: MIG mode is in pending enable state", "-i", "0", "-mig", "1")
	expect(t, h, 0, "0, Disabled, Enabled", "-i", "0", "--query-gpu=index,mig.mode.current,mig.mode.pending", "--format=csv,noheader")
	h.persistenced("--persistence-mode")
	expect(t, h, exitInUse, "could not be reset", "-i", "0", "-r")
	os.Remove(filepath.Join(h.root, hoststate.PersistencedPIDFile))
	expect(t, h, 0, "was successfully reset", "-i", "0", "-r")
	expect(t, h, 0, "0, Enabled, Enabled", "-i", "0", "--query-gpu=index,mig.mode.current,mig.mode.pending", "--format=csv,noheader")
}

// gpukit's own rendered MIG script, run by bash against the stand-in: the
// layout is made, a second run changes nothing, and a GPU without MIG (an
// L40S) fails it.
func TestGpukitMIGScript(t *testing.T) {
	h := migHost(t)
	bin := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "nvidia-smi")); err != nil {
		t.Fatal(err)
	}
	script, err := scripts.MIGScript(scripts.MIGParams{Units: []string{"gpusim-test-none"}, GPUs: []scripts.MIGGPU{
		{Index: 0, Enabled: true, Profiles: []string{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}, IDs: []int{9, 14, 19, 19}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	runScript := func() (string, error) {
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "GPUSIM_TEST_SMI_ROOT="+h.root)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := runScript()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !strings.Contains(out, "MIG mode Enabled") {
		t.Errorf("first run:\n%s", out)
	}
	_, list := h.smi("-L")
	if strings.Count(list, "  MIG ") != 4 {
		t.Errorf("-L after the script:\n%s", list)
	}
	out, err = runScript()
	if err != nil || strings.Contains(out, "created") || strings.Contains(out, "MIG Mode for GPU") {
		t.Errorf("second run changed something (%v):\n%s", err, out)
	}
	h.write(hoststate.CaptureFile, "/usr/share/gpusim/captures/l40s__drv595.80\n")
	for _, f := range []string{"list-L.txt", "query-gpu-idle.csv", "q-idle.txt", "table-idle.txt"} {
		b, _ := os.ReadFile(filepath.Join(fixtures.Dir(t, "nvidia-smi"), "l40s__drv595.80__"+f))
		h.write("/usr/share/gpusim/captures/l40s__drv595.80__"+f, string(b))
	}
	if out, err := runScript(); err == nil {
		t.Errorf("the MIG script passed on an L40S:\n%s", out)
	}
}
