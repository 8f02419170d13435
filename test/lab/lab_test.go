//go:build linux

package lab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestScript needs no root: the embedded lab.sh parses, and is shellcheck-clean where
// shellcheck is installed.
func TestScript(t *testing.T) {
	t.Parallel()
	c := exec.Command("bash", "-n")
	c.Stdin = bytes.NewReader(labScript)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("bash -n lab.sh: %v\n%s", err, out)
	}
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Log("shellcheck not installed: lint skipped")
		return
	}
	if out, err := exec.Command("shellcheck", "lab.sh").CombinedOutput(); err != nil {
		t.Fatalf("shellcheck lab.sh: %v\n%s", err, out)
	}
}

func TestFullHosts(t *testing.T) {
	t.Parallel()
	l := Start(t, Options{Hosts: 3})
	checkFiles(t, l, "lab", 3)
	for _, h := range l.Hosts {
		if got := l.SSH(t, h.Name, "hostname"); got != h.Name {
			t.Errorf("%s: hostname %q", h.Name, got)
		}
		// systemd is PID 1 and finished booting; "degraded" would still be a booted host
		if got := l.SSH(t, h.Name, "cat /proc/1/comm; systemctl is-system-running || true"); got != "systemd\nrunning" && got != "systemd\ndegraded" {
			t.Errorf("%s: PID 1 and system state: %q", h.Name, got)
		}
	}
	t.Run("deploy has passwordless sudo", func(t *testing.T) {
		if got := l.SSH(t, "deploy@lab-1", "sudo -n id -u"); got != "0" {
			t.Errorf("sudo -n id -u as deploy: %q", got)
		}
	})
	t.Run("ops logs in with a password and sudo asks for it", func(t *testing.T) {
		checkOps(t, l, "lab-2")
	})
	t.Run("host is a bastion", func(t *testing.T) {
		jump := "ssh " + strings.Join(l.sshOptions(), " ") + " -W %h:%p deploy@" + l.address("lab-1")
		c := exec.Command("ssh", append(l.sshOptions(), "-o", "ProxyCommand="+jump, "root@"+l.address("lab-3"), "hostname")...)
		if out, err := c.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "lab-3" {
			t.Errorf("ssh to lab-3 through lab-1: %v: %s", err, out)
		}
	})
	t.Run("local repository serves apt", func(t *testing.T) {
		got := l.SSH(t, "lab-1", "echo 'deb [trusted=yes] http://"+l.Bridge+":8080/ ./' >/etc/apt/sources.list.d/gpukit-lab.list && "+
			"apt-get -q update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q gpukit-lab-hello >/dev/null && gpukit-lab-hello")
		if got != "gpukit-lab-hello 1.0 on lab-1" {
			t.Errorf("gpukit-lab-hello: %q", got)
		}
	})
	t.Run("stop and start keep the host key", func(t *testing.T) {
		l.Stop(t, "lab-2")
		if out, err := l.sshCommand("root", "lab-2", "true", "-o", "ConnectTimeout=3").CombinedOutput(); err == nil {
			t.Fatalf("ssh to stopped lab-2 succeeded: %s", out)
		}
		l.StartHost(t, "lab-2") // strict checking against the unchanged known_hosts: same key
		if got := l.SSH(t, "lab-2", "hostname; systemctl is-system-running || true"); got != "lab-2\nrunning" && got != "lab-2\ndegraded" {
			t.Errorf("lab-2 after start: %q", got)
		}
	})
	t.Run("rekey makes strict host key checking fail", func(t *testing.T) {
		l.Rekey(t, "lab-3")
		out, err := l.sshCommand("root", "lab-3", "true").CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("Host key verification failed")) {
			t.Errorf("ssh to rekeyed lab-3: err %v, output %s", err, out)
		}
		l.SSH(t, "lab-1", "true") // the others are untouched
	})
}

func TestLightHosts(t *testing.T) {
	t.Parallel()
	l := Start(t, Options{Hosts: 20, Light: true})
	checkFiles(t, l, "lite", 20)
	// all at once: sshd as PID 1, its own pid namespace (no other host's processes), hostname
	var wg sync.WaitGroup
	results := make([]string, len(l.Hosts))
	errs := make([]error, len(l.Hosts))
	for i, h := range l.Hosts {
		wg.Go(func() {
			out, err := l.sshCommand("root", h.Name, "hostname; cat /proc/1/comm; ps -e --no-headers | wc -l").Output()
			results[i], errs[i] = strings.TrimSpace(string(out)), err
		})
	}
	wg.Wait()
	for i, h := range l.Hosts {
		f := strings.Fields(results[i])
		if errs[i] != nil || len(f) != 3 || f[0] != h.Name || f[1] != "sshd" {
			t.Errorf("%s: %v: %q", h.Name, errs[i], results[i])
			continue
		}
		if n, _ := strconv.Atoi(f[2]); n > 8 {
			t.Errorf("%s sees %d processes: not its own pid namespace", h.Name, n)
		}
	}
	t.Run("deploy has passwordless sudo", func(t *testing.T) {
		if got := l.SSH(t, "deploy@lite-7", "sudo -n id -u"); got != "0" {
			t.Errorf("sudo -n id -u as deploy: %q", got)
		}
	})
	t.Run("ops logs in with a password and sudo asks for it", func(t *testing.T) {
		checkOps(t, l, "lite-3")
	})
}

// TestReleaseLeavesNothing crashes parts of a lab (a killed nspawn, a killed light host, a host
// whose pid file was lost), then releases it twice: no namespace, veth, mount, process, cgroup
// or nspawn leftover may remain. When no other lab runs, the bridge and repository go too.
func TestReleaseLeavesNothing(t *testing.T) {
	t.Parallel()
	Require(t)
	script := scriptPath(t)
	out, err := run(context.Background(), script, "auto", "up", "lab-1", "lab-2", "lite-1", "lite-2", "lite-3")
	if err != nil {
		t.Fatalf("up: %v\n%s", err, tail(out))
	}
	dir := filepath.Dir(lastLine(out))
	id := filepath.Base(dir)
	t.Cleanup(func() { run(context.Background(), script, id, "release") })
	if got := leftovers(id, dir); len(got) == 0 {
		t.Fatalf("the leftover check sees nothing of a running lab: it would not see leftovers either")
	}
	kill := func(host string) {
		t.Helper()
		f, err := os.ReadFile(filepath.Join(dir, "hosts", host, "pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.Fields(string(f))[0])
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %s: %v", host, err)
		}
	}
	kill("lab-1")  // systemd and its services stay behind in the host's cgroups
	kill("lite-1") // its pid namespace dies with it; overlay and netns remain
	if err := os.Remove(filepath.Join(dir, "hosts", "lite-2", "pid")); err != nil {
		t.Fatal(err) // a running host the lab lost track of
	}
	for range 2 {
		if out, err := run(context.Background(), script, id, "release"); err != nil {
			t.Fatalf("release: %v\n%s", err, tail(out))
		}
		if got := leftovers(id, dir); len(got) > 0 {
			t.Errorf("after release of lab %s:\n%s", id, strings.Join(got, "\n"))
		}
	}
	withLabLock(t, func() {
		if runs, _ := os.ReadDir(filepath.Join(labDir(), "run")); len(runs) > 0 {
			t.Logf("%d other labs running: bridge and repository stay", len(runs))
			return
		}
		if got := sharedLeftovers(); len(got) > 0 {
			t.Errorf("last lab released, yet:\n%s", strings.Join(got, "\n"))
		}
	})
}

// downSandbox runs lab.sh in private network, mount and pid namespaces with a private /run, a
// lab dir of its own (the real base bind-mounted read-only) and a cgroup name of its own: a
// whole lab machine in which `down` can be checked without touching labs that other test
// packages or people run on this machine. It starts two labs, crashes parts of one, runs down
// twice, then reports what is left.
const downSandbox = `set -euo pipefail
mount -t tmpfs -o mode=755 tmpfs /run
mkdir /run/cgroup
mount --rbind /sys/fs/cgroup /run/cgroup
mount -t sysfs sysfs /sys
mount --move /run/cgroup /sys/fs/cgroup
mkdir -p "$T/base" "$T/keys" "$T/secrets"
mount --bind "$REAL/base" "$T/base"
mount -o remount,bind,ro "$T/base"
mount --bind "$REAL/keys" "$T/keys"
mount --bind "$REAL/secrets" "$T/secrets"
ip link set lo up
cut -d' ' -f2 /proc/mounts | sort >/run/mounts.before # incl. the machine's, hidden under the new /run
"$SCRIPT" up lab-1 lab-2 lite-1 lite-2 lite-3 >/dev/null
GPUKIT_LAB_ID=2 "$SCRIPT" up --light 2 >/dev/null
"$SCRIPT" ssh lab-2 true
GPUKIT_LAB_ID=2 "$SCRIPT" ssh lite-2 true
kill -KILL "$(cut -d' ' -f1 "$T/run/1/hosts/lab-1/pid")" "$(cut -d' ' -f1 "$T/run/1/hosts/lite-1/pid")"
rm "$T/run/1/hosts/lite-2/pid"
"$SCRIPT" down
"$SCRIPT" down
echo "== netns"; ip netns list
echo "== links"; ip -o link show | cut -d: -f2
echo "== mounts"; cut -d' ' -f2 /proc/mounts | sort | comm -13 /run/mounts.before -
echo "== processes"; ps -eo args= | grep -vE '^(bash -c set -euo pipefail|ps -eo args=|grep -vE)' || true
echo "== cgroups"; find /sys/fs/cgroup -name "$GPUKIT_LAB_CGROUP" 2>/dev/null || true
echo "== state"; ls "$T"
`

// TestDownLeavesNothing: after `down` (twice, after crashes) no namespace, veth, bridge, mount,
// process or cgroup is left, and only the cached base and keys stay in the lab dir.
func TestDownLeavesNothing(t *testing.T) {
	t.Parallel()
	Require(t)
	script := scriptPath(t)
	if out, err := run(context.Background(), script, "", "base"); err != nil { // shared, built once
		t.Fatalf("base: %v\n%s", err, tail(out))
	}
	sandbox := t.TempDir()
	c := exec.Command("unshare", "--net", "--mount", "--pid", "--fork", "--mount-proc", "--propagation", "private", "bash", "-c", downSandbox)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GPUKIT_LAB") {
			c.Env = append(c.Env, kv)
		}
	}
	c.Env = append(c.Env, "REAL="+labDir(), "T="+sandbox, "SCRIPT="+script, "GPUKIT_LAB_DIR="+sandbox,
		fmt.Sprintf("GPUKIT_LAB_CGROUP=gpukit-lab-downtest-%d", os.Getpid()))
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("sandbox: %v\n%s", err, tail(out))
	}
	report := map[string][]string{}
	section := ""
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "== "); ok {
			section = name
			report[section] = []string{}
		} else if section != "" && line != "" {
			report[section] = append(report[section], line)
		}
	}
	want := map[string][]string{"netns": {}, "links": {"lo"}, "mounts": {}, "processes": {}, "cgroups": {},
		"state": {"base", "bin", "keys", "lock", "repo", "secrets"}}
	for name, w := range want {
		got, ok := report[name]
		if !ok {
			t.Errorf("no %s section in the sandbox's report:\n%s", name, out)
			continue
		}
		if name == "state" { // what stays: the cached base, keys, the built repository
			got = slices.DeleteFunc(got, func(s string) bool { return s == "deps.log" })
			if !slices.Contains(got, "base") || slices.Contains(got, "run") {
				t.Errorf("lab dir after down: %v", got)
			}
			continue
		}
		if !slices.Equal(got, w) {
			t.Errorf("%s after down: %q, want %q", name, got, w)
		}
	}
}

// TestInterruptedUpLeavesNothing interrupts `up` (Ctrl-C) while its hosts start: its traps
// must remove everything it created.
func TestInterruptedUpLeavesNothing(t *testing.T) {
	t.Parallel()
	Require(t)
	script := scriptPath(t)
	c := exec.Command(script, "up", "--light", "40")
	c.Env = append(os.Environ(), "GPUKIT_LAB_ID=auto")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	var id, dir string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() { // "lab: lab N: starting 40 hosts (DIR)"
		log.WriteString(sc.Text() + "\n")
		if _, err := fmt.Sscanf(sc.Text(), "lab: lab %s starting", &id); err == nil {
			id = strings.TrimSuffix(id, ":")
			dir = filepath.Join(labDir(), "run", id)
			break
		}
	}
	if id == "" {
		c.Wait()
		t.Fatalf("up never said which lab it starts:\n%s", log.String())
	}
	done := make(chan error, 1)
	go func() { // drain stderr to its end, then reap up
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
		}
		done <- c.Wait()
	}()
	t.Cleanup(func() { run(context.Background(), script, id, "release") })
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		pids, _ := filepath.Glob(filepath.Join(dir, "hosts", "*", "pid"))
		if len(pids) >= 5 {
			break
		}
	}
	if err := syscall.Kill(-c.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		t.Fatalf("up did not stop within 3 min of SIGINT")
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("up after SIGINT: %v, want exit status 130 (interrupted)\n%s", err, tail(log.Bytes()))
	}
	if got := leftovers(id, dir); len(got) > 0 {
		t.Errorf("after interrupted up of lab %s:\n%s", id, strings.Join(got, "\n"))
	}
}

// checkOps logs in as ops with its password only (no key) and runs sudo, which must ask for
// the password; a wrong password must be refused.
func checkOps(t *testing.T, l *Lab, name string) {
	t.Helper()
	if _, err := exec.LookPath("sshpass"); err != nil {
		t.Skip("sshpass not installed (lab.sh deps)")
	}
	login := func(password, cmd string) ([]byte, error) {
		c := exec.Command("sshpass", "-e", "ssh", "-F", "/dev/null", "-o", "PubkeyAuthentication=no",
			"-o", "PreferredAuthentications=password", "-o", "NumberOfPasswordPrompts=1",
			"-o", "UserKnownHostsFile="+l.KnownHosts, "-o", "GlobalKnownHostsFile=/dev/null",
			"-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR",
			"ops@"+l.address(name), cmd)
		c.Env = append(os.Environ(), "SSHPASS="+password)
		c.Stdin = strings.NewReader(l.SudoPassword + "\n") // for sudo -S
		return c.Output()
	}
	if out, err := login(l.SudoPassword, "sudo -S -p '' id -u"); err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Errorf("ops: password login + sudo -S: %v: %q", err, out)
	}
	if out, err := login(l.SudoPassword, "sudo -n true 2>&1"); err == nil || !strings.Contains(string(out), "password is required") {
		t.Errorf("ops: sudo without the password: %v: %q", err, out)
	}
	if out, err := login(l.SudoPassword+"x", "true"); err == nil {
		t.Errorf("ops: a wrong password was accepted: %q", out)
	}
}

// checkFiles: known_hosts holds each host's keys (full: rsa, ecdsa, ed25519; light: ecdsa,
// ed25519), the inventory and the Ansible inventory list every host.
func checkFiles(t *testing.T, l *Lab, prefix string, n int) {
	t.Helper()
	if len(l.Hosts) != n {
		t.Fatalf("%d hosts, want %d: %v", len(l.Hosts), n, l.Hosts)
	}
	kh, err := os.ReadFile(l.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string][]string{"lab": {"ssh-rsa", "ecdsa-sha2-nistp256", "ssh-ed25519"}, "lite": {"ecdsa-sha2-nistp256", "ssh-ed25519"}}[prefix]
	inv, err := os.ReadFile(l.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	ini, err := os.ReadFile(filepath.Join(l.Dir, map[string]string{"lab": "ansible-hosts.ini", "lite": "ansible-hosts-light.ini"}[prefix]))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"apiVersion: gpukit.dev/v1alpha1\n", "kind: Cluster\n", "    user: deploy\n",
		"    keyFile: " + l.KeyFile + "\n", "    knownHostsFile: " + l.KnownHosts + "\n", "    nvidia: http://" + l.Bridge + ":8080/\n"} {
		if !bytes.Contains(inv, []byte(want)) {
			t.Errorf("inventory lacks %q:\n%s", want, inv)
		}
	}
	for i, h := range l.Hosts {
		if want := fmt.Sprintf("%s-%d", prefix, i+1); h.Name != want {
			t.Errorf("host %d is %s, want %s", i, h.Name, want)
		}
		for _, typ := range types {
			if !bytes.Contains(kh, []byte(h.Address+" "+typ+" ")) {
				t.Errorf("known_hosts has no %s key of %s (%s)", typ, h.Name, h.Address)
			}
		}
		role := "worker"
		if i == 0 {
			role = "control-plane"
		}
		if want := fmt.Sprintf("  - name: %s\n      address: %s\n      roles: [%s]\n", h.Name, h.Address, role); !bytes.Contains(inv, []byte(want)) {
			t.Errorf("inventory lacks\n%s", want)
		}
		if !bytes.Contains(ini, []byte(h.Name+" ansible_host="+h.Address+"\n")) {
			t.Errorf("ansible inventory lacks %s", h.Name)
		}
	}
	if got, want := bytes.Count(kh, []byte("\n")), n*len(types); got != want {
		t.Errorf("known_hosts has %d lines, want %d", got, want)
	}
}

// sshCommand is SSH without failing the test, for the cases that must fail.
func (l *Lab) sshCommand(user, name, cmd string, extra ...string) *exec.Cmd {
	args := append(extra, l.sshOptions()...) // ssh takes the first value of an option
	return exec.Command("ssh", append(args, user+"@"+l.address(name), cmd)...)
}

// leftovers lists what remains of lab id on this machine.
func leftovers(id, dir string) []string {
	var found []string
	prefix := "gk" + id + "-"
	netns, _ := exec.Command("ip", "netns", "list").Output()
	for line := range strings.Lines(string(netns)) {
		if strings.HasPrefix(line, prefix) {
			found = append(found, "netns "+strings.TrimSpace(line))
		}
	}
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	for line := range strings.Lines(string(links)) {
		if f := strings.SplitN(line, ": ", 3); len(f) == 3 && strings.HasPrefix(f[1], prefix) {
			found = append(found, "link "+f[1])
		}
	}
	if mounts, err := os.ReadFile("/proc/mounts"); err == nil {
		for line := range strings.Lines(string(mounts)) {
			if f := strings.Fields(line); len(f) > 1 && (f[1] == dir || strings.HasPrefix(f[1], dir+"/")) {
				found = append(found, "mount "+f[1])
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(dir+"/")) {
			found = append(found, "process "+filepath.Base(filepath.Dir(p))+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		}
	}
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/gpukit-lab/" + id)
	deeper, _ := filepath.Glob("/sys/fs/cgroup/*/*/*/gpukit-lab/" + id) // below a caller's own cgroup
	for _, c := range append(cgroups, deeper...) {
		found = append(found, "cgroup "+c)
	}
	if nspawn, _ := filepath.Glob("/run/systemd/nspawn/propagate/" + prefix + "*"); len(nspawn) > 0 {
		found = append(found, "nspawn "+strings.Join(nspawn, " "))
	}
	if _, err := os.Stat(dir); err == nil {
		found = append(found, "state "+dir)
	}
	return found
}

// sharedLeftovers lists what must be gone once no lab runs: bridge, repository server, any gk
// namespace, veth or mount.
func sharedLeftovers() []string {
	var found []string
	if err := exec.Command("ip", "link", "show", "gklab0").Run(); err == nil {
		found = append(found, "bridge gklab0")
	}
	if out, _ := exec.Command("ip", "netns", "list").Output(); bytes.Contains(out, []byte("gk")) {
		found = append(found, "netns: "+string(out))
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte("http.server\x008080\x00--bind\x0010.251.0.1")) {
			found = append(found, "repository server "+filepath.Dir(p))
		}
	}
	if mounts, err := os.ReadFile("/proc/mounts"); err == nil && bytes.Contains(mounts, []byte(" "+labDir()+"/")) {
		found = append(found, "mounts under "+labDir())
	}
	return found
}

// withLabLock holds the lab's lock: no lab starts or ends its shared part meanwhile.
func withLabLock(t *testing.T, f func()) {
	t.Helper()
	lock, err := os.OpenFile(filepath.Join(labDir(), "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	f()
}
