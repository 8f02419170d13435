package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpukit/gpukit/pkg/osfamily"
)

// pmFunctions are the package-manager functions (templates/lib/pm.tmpl) as
// a script renders them, their log directory and lock poll moved for a
// test, with stand-ins of dpkg and apt-get first in PATH.
func pmFunctions(t *testing.T, bin string) string {
	t.Helper()
	debian, _ := osfamily.Detect("debian", "12")
	cmd, err := CUDAToolkit(CUDAToolkitParams{Family: debian, CUDA: "13.0"})
	if err != nil {
		t.Fatal(err)
	}
	s := cmd.Script[strings.Index(cmd.Script, "pm_err="):]
	s = s[:strings.Index(s, "dnf() {")]
	s = strings.ReplaceAll(s, "/var/log/gpukit", filepath.Join(t.TempDir(), "logs"))
	s = strings.ReplaceAll(s, "sleep 3", "sleep 0.1")
	return "set -euo pipefail\nexport PATH=" + bin + ":$PATH\n" + s
}

func writeExec(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/bash\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// A package manager outlives the script that started it (the watchdog ends
// the script's process group when the connection drops); dpkg's lock is
// waited out; an interrupted dpkg is finished before apt goes on; output
// and exit status come through.
func TestPackageManagerPrelude(t *testing.T) {
	t.Parallel()
	bin, state := t.TempDir(), t.TempDir()
	// dpkg: --audit says what is pending; otherwise the lock is held twice,
	// then the call is recorded.
	writeExec(t, filepath.Join(bin, "dpkg"), `
s=`+state+`
if [ "$1" = --audit ]; then [ -e $s/interrupted ] && echo "half-configured: nvidia-dkms"; exit 0; fi
n=$(cat $s/tries 2>/dev/null || echo 0); echo $((n + 1)) >$s/tries
if [ "$n" -lt 2 ]; then echo "dpkg: error: dpkg frontend lock was locked by another process with pid 4242" >&2; exit 2; fi
echo "dpkg $*" >>$s/calls; rm -f $s/interrupted
`)
	writeExec(t, filepath.Join(bin, "apt-get"), `
s=`+state+`
echo "apt-get $*" >>$s/calls
case " $* " in *" slow "*) sleep 1.5; echo done >$s/slow-finished ;; *" fail "*) echo "E: Unable to locate package fail" >&2; exit 100 ;; esac
echo "Setting up $*"
`)
	fns := pmFunctions(t, bin)
	run := func(script string) (string, error) {
		out, err := exec.Command("bash", "-c", fns+script).CombinedOutput()
		return string(out), err
	}

	if err := os.WriteFile(filepath.Join(state, "interrupted"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run("apt-get install -y cuda-toolkit-13-0")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	calls, _ := os.ReadFile(filepath.Join(state, "calls"))
	want := "dpkg --force-confdef --force-confold --configure -a\n" +
		"apt-get -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold install -y cuda-toolkit-13-0\n"
	if string(calls) != want {
		t.Errorf("calls:\n%s\nwant:\n%s", calls, want)
	}
	if !strings.Contains(out, "dpkg was interrupted") || !strings.Contains(out, "Setting up") || strings.Count(out, "locked by another process") != 2 {
		t.Errorf("output:\n%s", out)
	}

	if out, err := run("apt-get install fail"); err == nil || !strings.Contains(out, "E: Unable to locate package fail") {
		t.Errorf("a failing install: %v\n%s", err, out)
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 100 {
		t.Errorf("exit status %v, want apt-get's 100", err)
	}

	// The script's process group is killed mid-install: apt-get finishes.
	c := exec.Command("bash", "-c", fns+"apt-get install slow")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	_ = c.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(state, "slow-finished")); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Error("the install died with the script that started it")
}

// nvidia-smi on a wedged GPU: the call is bounded, says so, and the
// fallback to the text report does not wait a second time.
func TestSmiBounded(t *testing.T) {
	t.Parallel()
	cmd, err := GPUStatus()
	if err != nil {
		t.Fatal(err)
	}
	s := cmd.Script[strings.Index(cmd.Script, "smi_wedged="):]
	s = s[:strings.Index(s, "\n}\n")+3]
	s = strings.ReplaceAll(s, "timeout -k 5 60 nvidia-smi", "timeout -k 1 1 nvidia-smi")
	bin, calls := t.TempDir(), filepath.Join(t.TempDir(), "calls")
	writeExec(t, filepath.Join(bin, "nvidia-smi"), "echo call >>"+calls+"\nsleep 100\n")
	start := time.Now()
	out, err := exec.Command("bash", "-c", "set -euo pipefail\nexport PATH="+bin+":$PATH\n"+s+"smi -q -x || smi -q || true\n").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s", took)
	}
	if b, _ := os.ReadFile(calls); string(b) != "call\n" || strings.Count(string(out), "did not answer within 60s") != 2 {
		t.Errorf("nvidia-smi called %q, output:\n%s", b, out)
	}
}
