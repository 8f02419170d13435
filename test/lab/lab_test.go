//go:build linux

package lab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpukit/gpukit/test/shellcheck"
)

// TestScript needs no root: the embedded lab.sh parses, and is shellcheck-clean where
// shellcheck is installed.
func TestScript(t *testing.T) {
	t.Parallel()
	shellcheck.Check(t, "lab.sh", string(labScript))
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

// --kube hosts are ready for kubelet and containerd: CAP_SYSLOG and
// /dev/kmsg, /var/lib/containerd on this machine's disk, the machine-wide
// sysctls kubelet writes shown as the host's own files, so that a write
// there never reaches this machine, and a default gateway and a resolver
// file (the bridge; nothing behind it). Ordinary full hosts have none of it.
func TestKubeHosts(t *testing.T) {
	t.Parallel()
	l := Start(t, Options{Hosts: 1, Kube: true})
	const probe = `printf 'syslog=%d\n' $(( (0x$(awk '/^CapEff/ {print $2}' /proc/1/status) >> 34) & 1 ))
n=$(timeout 2 dd if=/dev/kmsg bs=8192 count=1 2>/dev/null | wc -c); printf 'kmsg=%d\n' $(( n > 0 ))
printf 'containerd=%s\n' "$(stat -f -c %T /var/lib/containerd 2>/dev/null || stat -f -c %T /var/lib)"
printf 'sysctl=%s\n' "$(cat /proc/sys/vm/overcommit_memory /proc/sys/kernel/panic /proc/sys/kernel/panic_on_oops | tr '\n' ,)"
printf 'gateway=%s\n' "$(ip -4 route show default | awk '{print $3}')"
printf 'resolver=%s\n' "$(cat /etc/gpukit-lab/resolv.conf 2>/dev/null)"`
	got := l.SSH(t, "lab-1", probe)
	want := "syslog=1\nkmsg=1\ncontainerd=ext2/ext3\nsysctl=1,10,1,\ngateway=" + l.Bridge + "\nresolver=nameserver " + l.Bridge
	if got != want {
		t.Errorf("kube host:\n%s\nwant\n%s", got, want)
	}
	machine, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	if err != nil {
		t.Fatal(err)
	}
	l.SSH(t, "lab-1", "echo 2 >/proc/sys/vm/overcommit_memory")
	after, _ := os.ReadFile("/proc/sys/vm/overcommit_memory")
	if string(after) != string(machine) || l.SSH(t, "lab-1", "cat /proc/sys/vm/overcommit_memory /etc/gpukit-lab/sysctl/vm.overcommit_memory") != "2\n2" {
		t.Errorf("a write to vm.overcommit_memory in the host: machine %q -> %q", machine, after)
	}

	plain := Start(t, Options{Hosts: 1})
	if got := plain.SSH(t, "lab-1", probe); !strings.HasPrefix(got, "syslog=0\nkmsg=0\ncontainerd=overlayfs\n") {
		t.Errorf("an ordinary full host:\n%s", got)
	}
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

// TestReleaseLeavesNothing crashes parts of a lab (a killed supervisor, a killed light host, a host
// whose pid file was lost), then releases it twice: no namespace, veth, mount, process, cgroup
// or nspawn leftover may remain. When no other lab runs, the bridge and repository go too.
func TestReleaseLeavesNothing(t *testing.T) {
	t.Parallel()
	Require(t)
	l := start(t, nil, false, "lab-1", "lab-2", "lite-1", "lite-2", "lite-3")
	script, dir, id := l.script, l.Dir, l.id
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
	kill("lab-1")  // its supervisor: nspawn, systemd and its services stay behind in the host's cgroups
	kill("lite-1") // its pid namespace dies with it; overlay and netns remain
	if err := os.Remove(filepath.Join(dir, "hosts", "lite-2", "pid")); err != nil {
		t.Fatal(err) // a running host the lab lost track of
	}
	// All under the lab lock: once released, the id is free, and a lab that another test starts
	// would take it and show up as this one's leftovers (or be taken down by the second release).
	withLabLock(t, func() {
		for range 2 {
			if out, err := runEnv(context.Background(), script, id, lockHeld, "release"); err != nil {
				t.Fatalf("release: %v\n%s", err, Tail(out))
			}
			if got := leftovers(id, dir); len(got) > 0 {
				t.Errorf("after release of lab %s:\n%s", id, strings.Join(got, "\n"))
			}
		}
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
# no way out of this network namespace: the Debian mirror is unreachable, and must say so
if "$SCRIPT" debian-mirror >/run/debian-mirror.out 2>&1; then echo "debian-mirror succeeded" >>/run/debian-mirror.out; fi
"$SCRIPT" reboot-delay lab-2 30
"$SCRIPT" ssh lab-2 systemctl reboot || true
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
echo "== debian-mirror"; cat /run/debian-mirror.out
`

// TestDownLeavesNothing: after `down` (twice, after crashes) no namespace, veth, bridge, mount,
// process or cgroup is left, and only the cached base and keys stay in the lab dir.
func TestDownLeavesNothing(t *testing.T) {
	t.Parallel()
	Require(t)
	script := scriptPath(t)
	if out, err := run(context.Background(), script, "", "base"); err != nil { // shared, built once
		t.Fatalf("base: %v\n%s", err, Tail(out))
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
		t.Fatalf("sandbox: %v\n%s", err, Tail(out))
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
		"state": {"base", "bin", "keys", "lock", "repo", "secrets"}, "debian-mirror": {}}
	for name, w := range want {
		got, ok := report[name]
		if !ok {
			t.Errorf("no %s section in the sandbox's report:\n%s", name, out)
			continue
		}
		if name == "debian-mirror" { // one clear line, no mirror name
			msg := strings.Join(got, "\n")
			if !strings.Contains(msg, "lab: error: this machine's Debian mirror is unreachable") ||
				strings.Contains(msg, "debian.org") || strings.Contains(msg, "succeeded") {
				t.Errorf("debian-mirror without a way out: %q", msg)
			}
			t.Logf("debian-mirror without a way out: %s", msg)
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
	ours, err := claim(dir) // up runs: its lab is there
	if err != nil {
		syscall.Kill(-c.Process.Pid, syscall.SIGINT)
		t.Fatalf("lab %s: %v", id, err)
	}
	t.Cleanup(func() { // unless up removed it, as it must: then its id may be another test's lab
		if ours() {
			run(context.Background(), script, id, "release")
		}
	})
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
		t.Errorf("up after SIGINT: %v, want exit status 130 (interrupted)\n%s", err, Tail(log.Bytes()))
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
	return l.command(user, name, cmd, extra...)
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

// lockHeld tells lab.sh that the caller holds the lab lock (withLabLock), so that it runs what
// needs the lock without waiting for it.
var lockHeld = []string{"GPUKIT_LAB_LOCK_HELD=1"}

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

// TestReboots: a full host that reboots from inside comes back like a machine (new boot id, same
// host key, disk and address) after its reboot delay; "never" keeps it down until start; a
// poweroff keeps it off. It logs the time from `systemctl reboot` to ssh answering again.
func TestReboots(t *testing.T) {
	t.Parallel()
	l := Start(t, Options{Hosts: 3})
	t.Run("reboot comes back with a new boot id, same host key and disk", func(t *testing.T) {
		t.Parallel()
		before := l.BootID(t, "lab-1")
		l.SSH(t, "lab-1", "echo kept >/root/written-before-reboot && sync")
		for i, how := range []string{"systemctl reboot", "shutdown -r now"} {
			if i > 0 {
				l.SetRebootDelay(t, "lab-1", 0)
			}
			delay := rebootDelay(t, l, "lab-1") // first the default: GPUKIT_LAB_REBOOT_DELAY, else 3 s
			began := time.Now()
			l.rebootWith(t, "lab-1", how)
			down := time.Since(began)
			if i == 0 {
				if got := l.State(t, "lab-1"); got != "rebooting" {
					t.Errorf("state %q right after the reboot, want rebooting", got)
				}
				if st := labStatus(t, l); !strings.Contains(st, "rebooting") {
					t.Errorf("lab.sh status shows no rebooting host:\n%s", st)
				}
			}
			back := waitSSH(t, l, "lab-1", time.Minute)
			t.Logf("%s (reboot delay %v): down after %.1fs, ssh answers after %.1fs", how, delay, down.Seconds(), back.Sub(began).Seconds())
			if back.Sub(began) < delay {
				t.Errorf("%s: ssh answers %.1fs after the reboot, before its delay of %v was over", how, back.Sub(began).Seconds(), delay)
			}
			// strict host key checking against the unchanged known_hosts: same host keys
			after := l.BootID(t, "lab-1")
			if after == before || after == "" {
				t.Errorf("boot_id %q after reboot, %q before", after, before)
			}
			before = after
			if got := l.SSH(t, "lab-1", "cat /root/written-before-reboot; hostname; ip -4 -o addr show eth0 | awk '{print $4}'"); got != "kept\nlab-1\n"+l.address("lab-1")+"/16" {
				t.Errorf("after reboot: %q", got)
			}
			if got := l.SSH(t, "lab-1", "systemctl is-system-running --wait || true"); got != "running" && got != "degraded" {
				t.Errorf("system state after reboot: %q", got)
			}
		}
	})
	t.Run("slow, then never: stays down until start", func(t *testing.T) {
		t.Parallel()
		before := l.BootID(t, "lab-2")
		l.SetRebootDelay(t, "lab-2", 30*time.Second)
		l.Reboot(t, "lab-2")
		time.Sleep(4 * time.Second) // longer than the default delay
		if got := l.State(t, "lab-2"); got != "rebooting" {
			t.Errorf("state %q 4 s into a 30 s reboot delay", got)
		}
		checkPortClosed(t, l, "lab-2")
		l.SetRebootDelay(t, "lab-2", RebootNever) // applies to the reboot under way
		waitState(t, l, "lab-2", 10*time.Second, "down")
		if got := l.State(t, "lab-2"); got != "down" {
			t.Errorf("lab.sh state: lab-2 is %q, its supervisor says down", got)
		}
		if st := labStatus(t, l); !regexp.MustCompile(`lab-2 .* down .*reboot delay never`).MatchString(st) {
			t.Errorf("lab.sh status does not show lab-2 down:\n%s", st)
		}
		checkPortClosed(t, l, "lab-2")
		l.StartHost(t, "lab-2")
		if after := l.BootID(t, "lab-2"); after == before {
			t.Errorf("same boot_id after start: %s", after)
		}
		if got := l.State(t, "lab-2"); got != "running" {
			t.Errorf("state after start: %q", got)
		}
		// start during a reboot delay: boots at once
		before = l.BootID(t, "lab-2")
		l.SetRebootDelay(t, "lab-2", time.Hour)
		l.Reboot(t, "lab-2")
		began := time.Now()
		l.StartHost(t, "lab-2")
		if took := time.Since(began); took > 30*time.Second {
			t.Errorf("start of a host in a 1 h reboot delay took %v", took)
		}
		if after := l.BootID(t, "lab-2"); after == before {
			t.Errorf("same boot_id after start during the reboot delay: %s", after)
		}
	})
	t.Run("poweroff stays off", func(t *testing.T) {
		t.Parallel()
		if out, err := l.command("root", "lab-3", "systemctl poweroff").CombinedOutput(); err != nil && !isExit(err, 255) {
			t.Fatalf("systemctl poweroff: %v\n%s", err, out)
		}
		waitState(t, l, "lab-3", 30*time.Second, "off")
		time.Sleep(4 * time.Second) // longer than the default reboot delay
		if got := l.State(t, "lab-3"); got != "off" {
			t.Errorf("lab-3 is %s 4 s after poweroff", got)
		}
		checkPortClosed(t, l, "lab-3")
		l.StartHost(t, "lab-3")
		l.SSH(t, "lab-3", "true")
	})
}

// TestReleaseDuringReboot releases a lab while one host waits out its reboot delay and another
// is shutting down for a reboot: nothing may be left (supervisors included).
func TestReleaseDuringReboot(t *testing.T) {
	t.Parallel()
	l := Start(t, Options{Hosts: 2})
	l.SetRebootDelay(t, "lab-1", time.Minute)
	l.Reboot(t, "lab-1")
	// lab-2 takes 5 s to shut down (a service slow to stop, which says when it is stopping):
	// it is still shutting down when the lab is released
	l.SSH(t, "lab-2", `cat >/etc/systemd/system/slow-stop.service <<'EOF'
[Unit]
Description=lab test: a service that takes 5 s to stop
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/bin/sh -c 'touch /var/tmp/shutting-down; sleep 5'
EOF
systemctl daemon-reload && systemctl start slow-stop.service`)
	_, boots := l.bootState("lab-2")
	l.SetRebootDelay(t, "lab-2", 0)
	if out, err := l.command("root", "lab-2", "systemctl reboot").CombinedOutput(); err != nil && !isExit(err, 255) {
		t.Fatalf("reboot lab-2: %v\n%s", err, out)
	}
	stopping := filepath.Join(l.Dir, "hosts", "lab-2", "merged", "var", "tmp", "shutting-down") // its disk, seen from here
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(stopping); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lab-2 did not begin to shut down within 30 s of systemctl reboot")
		}
	}
	if st, b := l.bootState("lab-2"); st != "running" || b != boots {
		t.Fatalf("lab-2 is %s (boot %d), want still running its boot %d: shutting down", st, b, boots)
	}
	if got := l.State(t, "lab-1"); got != "rebooting" {
		t.Errorf("lab-1 is %s, want rebooting", got)
	}
	withLabLock(t, func() { // the id is free once released: see TestReleaseLeavesNothing
		if out, err := runEnv(context.Background(), l.script, l.id, lockHeld, "release"); err != nil {
			t.Fatalf("release: %v\n%s", err, Tail(out))
		}
		if got := leftovers(l.id, l.Dir); len(got) > 0 {
			t.Errorf("after release of lab %s during reboots:\n%s", l.id, strings.Join(got, "\n"))
		}
	})
}

// TestOwnerGone: when the test that started a lab dies (killed by -timeout), the supervisors of
// its full hosts power them off and exit, a rebooting host does not come back, and the next
// Start releases the rest.
func TestOwnerGone(t *testing.T) {
	t.Parallel()
	Require(t)
	owner := exec.Command("sleep", "600") // stands in for a test binary
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer owner.Process.Kill()
	l := start(t, []string{"GPUKIT_LAB_OWNER=" + strconv.Itoa(owner.Process.Pid)}, false, "2")
	script, dir, id := l.script, l.Dir, l.id
	l.SetRebootDelay(t, "lab-1", time.Minute)
	l.Reboot(t, "lab-1")
	owner.Process.Kill()
	owner.Wait()
	// off within 30 s, or gone: another test's Start may reap the lab meanwhile
	deadline := time.Now().Add(30 * time.Second)
	for _, h := range l.Hosts {
		waitState(t, l, h.Name, time.Until(deadline), "off", "")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		procs := processesUnder(dir)
		if len(procs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("hosts off, yet processes of lab %s run:\n%s", id, strings.Join(procs, "\n"))
			break
		}
	}
	// the next Start reaps the lab (a light host: cheap); under the lab lock, because the reaped
	// id is free for any lab to take (see TestReleaseLeavesNothing)
	withLabLock(t, func() {
		if out, err := runEnv(context.Background(), script, "auto", lockHeld, "up", "--light", "1"); err != nil {
			t.Fatalf("up: %v\n%s", err, Tail(out))
		} else {
			other := filepath.Base(filepath.Dir(lastLine(out)))
			runEnv(context.Background(), script, other, lockHeld, "release")
		}
		if got := leftovers(id, dir); len(got) > 0 {
			t.Errorf("lab %s of a dead owner after the next up:\n%s", id, strings.Join(got, "\n"))
		}
	})
}

// TestDebianMirror: a full host pointed at the lab's Debian proxy updates (signatures checked
// against Debian's keyring) and installs a real package from non-free.
func TestDebianMirror(t *testing.T) {
	t.Parallel()
	l := Start(t, Options{Hosts: 1})
	m := l.DebianMirror(t)
	if m.Debian != "http://"+l.Bridge+":3143/debian" || m.Security != "http://"+l.Bridge+":3143/debian-security" {
		t.Errorf("mirror URLs %q, %q", m.Debian, m.Security)
	}
	for _, want := range []string{"Components: main contrib non-free non-free-firmware\n",
		"Suites: bookworm bookworm-updates\n", "Suites: bookworm-security\n",
		"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"} {
		if !strings.Contains(m.Sources, want) {
			t.Errorf("sources lack %q:\n%s", want, m.Sources)
		}
	}
	if strings.Contains(m.Sources, "trusted") {
		t.Errorf("sources trust without signatures:\n%s", m.Sources)
	}
	if got := l.SSH(t, "lab-1", "ls /etc/apt/sources.list.d/; grep -v '^#' /etc/apt/sources.list || true"); got != "" {
		t.Errorf("a new host has package sources already: %q", got)
	}
	l.UseDebianMirror(t, "lab-1")
	began := time.Now()
	l.SSH(t, "lab-1", "apt-get -q update >/tmp/update.log 2>&1 || { cat /tmp/update.log; exit 1; }")
	update := time.Since(began)
	began = time.Now()
	// unrar: a small real package from non-free
	got := l.SSH(t, "lab-1", "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends unrar >/tmp/install.log 2>&1 || "+
		"{ cat /tmp/install.log; exit 1; }; apt-cache policy unrar | grep -m1 -o 'bookworm[a-z-]*/non-free'; unrar | grep -m1 -o UNRAR")
	t.Logf("apt-get update %.1fs, install unrar %.1fs", update.Seconds(), time.Since(began).Seconds())
	if got != "bookworm/non-free\nUNRAR" && got != "bookworm-security/non-free\nUNRAR" && got != "bookworm-updates/non-free\nUNRAR" {
		t.Errorf("unrar from non-free: %q", got)
	}
	t.Run("proxy form serves Debian only", func(t *testing.T) {
		proxy, err := url.Parse(m.Proxy)
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}, Timeout: time.Minute}
		for target, want := range map[string]int{
			"http://deb.debian.org/debian/dists/bookworm/InRelease":                        200,
			"http://security.debian.org/debian-security/dists/bookworm-security/InRelease": 200,
			"http://example.com/": 403,
		} {
			resp, err := client.Get(target)
			if err != nil {
				t.Errorf("GET %s through %s: %v", target, m.Proxy, err)
				continue
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s through %s: %s, want %d", target, m.Proxy, resp.Status, want)
			}
		}
	})
	// signatures are checked: the same mirror with a keyring that lacks Debian's keys fails
	out, err := l.command("root", "lab-1", "sed 's#debian-archive-keyring.gpg#debian-archive-removed-keys.gpg#' /etc/apt/sources.list.d/debian.sources >/tmp/wrongkey.sources && "+
		"mkdir -p /tmp/lists/partial && apt-get update -o Dir::Etc::SourceList=/tmp/wrongkey.sources -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists=/tmp/lists 2>&1").CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("NO_PUBKEY")) {
		t.Errorf("apt-get update with the wrong keyring: %v (want a failure: NO_PUBKEY)\n%s", err, Tail(out))
	}
}

// TestDebianNvidiaDriver installs nvidia-driver (~135 packages, 244 MB) from the lab's Debian
// proxy in two hosts, one after the other: the first fills the cache unless an earlier run did,
// the second is served from the cache (the proxy's transfer log: the same packages, none
// fetched upstream). Opt-in (GPUKIT_LAB_NVIDIA_DRIVER=1): a measurement.
func TestDebianNvidiaDriver(t *testing.T) {
	if os.Getenv("GPUKIT_LAB_NVIDIA_DRIVER") != "1" {
		t.Skip("GPUKIT_LAB_NVIDIA_DRIVER=1 installs nvidia-driver (244 MB download) in two lab hosts")
	}
	t.Parallel()
	l := Start(t, Options{Hosts: 2})
	cached, _ := filepath.Glob(filepath.Join(labDir(), "debian-mirror", "cache", "*", "pool", "non-free", "n", "nvidia-graphics-drivers", "nvidia-driver_*.deb"))
	proxyLog := filepath.Join(labDir(), "debian-mirror", "log", "apt-cacher.log")
	var served [2]int // packages the proxy gave each host
	for i, h := range l.Hosts {
		l.UseDebianMirror(t, h.Name)
		var from int64 // the proxy's transfer log from here on is this host's install
		if st, err := os.Stat(proxyLog); err == nil {
			from = st.Size()
		}
		began := time.Now()
		got := l.SSH(t, h.Name, "export DEBIAN_FRONTEND=noninteractive; apt-get -q update >/tmp/apt.log 2>&1 && "+
			"apt-get install -y -q --no-install-recommends nvidia-driver >>/tmp/apt.log 2>&1 || { tail -n 40 /tmp/apt.log; exit 1; }; "+
			"grep -E '^(Need to get|Fetched)' /tmp/apt.log; dpkg-query -W -f='${Version}' nvidia-driver")
		cache := "warm"
		if i == 0 && len(cached) == 0 {
			cache = "cold"
		}
		took := time.Since(began)
		var fetched []string
		served[i], fetched = proxyTransfers(t, proxyLog, from, h.Address)
		t.Logf("%s: apt-get update + install nvidia-driver (%s cache): %.1fs, %d packages from the proxy, %d of them fetched upstream\n%s",
			h.Name, cache, took.Seconds(), served[i], len(fetched), got)
		if i == 1 && (served[1] == 0 || served[1] != served[0] || len(fetched) > 0) {
			t.Errorf("%s got %d packages from the proxy (%s: %d), %d of them fetched upstream, want all from the cache: %v",
				h.Name, served[1], l.Hosts[0].Name, served[0], len(fetched), fetched)
		}
	}
}

// proxyTransfers reads apt-cacher-ng's transfer log (TIME|O or I|BYTES|CLIENT|PATH) from offset
// on: how many packages (.deb) it sent to client, and those it fetched upstream for client.
func proxyTransfers(t *testing.T, log string, offset int64, client string) (served int, fetched []string) {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "|")
		if len(fields) != 5 || fields[3] != client || !strings.HasSuffix(fields[4], ".deb") {
			continue
		}
		switch fields[1] {
		case "O":
			served++
		case "I":
			fetched = append(fetched, fields[4])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return served, fetched
}

// rebootDelay is full host name's reboot delay (lab.sh reboot-delay NAME); "never" fails the test.
func rebootDelay(t *testing.T, l *Lab, name string) time.Duration {
	t.Helper()
	v := lastLine(l.hostCommand(t, "reboot-delay", name))
	d, err := time.ParseDuration(v + "s")
	if err != nil {
		t.Fatalf("reboot delay of %s: %q: %v", name, v, err)
	}
	return d
}

// waitState waits until host name's supervisor has recorded one of states in its state file
// ("": no state file, the lab is gone); it reads the file, instead of running lab.sh state ten
// times a second. It fails the test after timeout.
func waitState(t *testing.T, l *Lab, name string, timeout time.Duration, states ...string) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		st, _ := l.bootState(name)
		if slices.Contains(states, st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lab %s: %s is %q after %v, want %q", l.id, name, st, timeout.Round(time.Second), states)
		}
	}
}

func isExit(err error, code int) bool {
	ee, ok := err.(*exec.ExitError)
	return ok && ee.ExitCode() == code
}

// waitSSH waits until host name accepts an ssh login (strict host key checking) and returns when.
func waitSSH(t *testing.T, l *Lab, name string, timeout time.Duration) time.Time {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; {
		if c, err := net.DialTimeout("tcp", l.address(name)+":22", time.Second); err == nil {
			c.Close()
			if err := l.command("root", name, "true").Run(); err == nil {
				return time.Now()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no ssh within %v", name, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkPortClosed: nothing answers on host name's port 22 (a machine that is down).
func checkPortClosed(t *testing.T, l *Lab, name string) {
	t.Helper()
	if c, err := net.DialTimeout("tcp", l.address(name)+":22", 3*time.Second); err == nil {
		c.Close()
		t.Errorf("%s: port 22 accepts connections while the host is down", name)
	}
}

func labStatus(t *testing.T, l *Lab) string {
	t.Helper()
	out, err := run(context.Background(), l.script, l.id, "status")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	return string(out)
}

// processesUnder lists the processes whose command line names something under dir.
func processesUnder(dir string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(dir+"/")) {
			found = append(found, filepath.Base(filepath.Dir(p))+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		}
	}
	return found
}
