// Package lab gives integration tests real hosts to talk to: simulated baremetal machines on
// this Linux machine, each with its own network namespace on a private bridge, a real OpenSSH
// server and a Debian 12 userland (full hosts boot systemd with systemd-nspawn; light hosts run
// sshd as PID 1 in their own namespaces and scale to 100+). It drives test/lab/lab.sh, which
// is embedded in the test binary, and needs root; see README.md.
//
// Every Start gets a lab of its own (an id N with its own hosts and addresses in
// 10.251.(2N).0/24 and 10.251.(2N+1).0/24), so test packages that `go test ./...` runs in
// parallel each Start without waiting for one another; only the shared steps (building the
// base once, the bridge, the repository, choosing the id) are serialised by a flock on
// $GPUKIT_LAB_DIR/lock. t.Cleanup releases the lab; a lab whose test binary was killed is
// released by the next Start.
package lab

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options says which hosts Start brings up.
type Options struct {
	// Hosts is the number of hosts, 1..254: lab-1..lab-N, or lite-1..lite-N when Light.
	Hosts int
	// Light hosts run sshd as PID 1 in their own namespaces (no systemd, ~1.5 MB each) instead
	// of booting systemd in systemd-nspawn (~20 MB each).
	Light bool
	// Kube makes full hosts ready for kubelet and containerd (lab.sh up --kube).
	Kube bool
	// Fabric gives full hosts a second NIC on a network of their own (lab.sh up --fabric):
	// Host.Fabric, as a multi-NIC GPU server's cluster network beside its SSH network.
	Fabric bool
}

// Host is one lab host.
type Host struct {
	Name    string // lab-N or lite-N; also its hostname
	Address string // IPv4 address on the lab bridge, port 22
	// Fabric is the host's address on the fabric network (eth1), with Options.Fabric.
	Fabric string
}

// Lab is a running lab. Its methods may be called from several goroutines.
type Lab struct {
	Dir        string // this lab's state directory ($GPUKIT_LAB_DIR/run/ID)
	KeyFile    string // private key accepted by root, deploy and ops on every host
	KnownHosts string // known_hosts with every host's real keys (as created; Rekey leaves it)
	Inventory  string // gpukit inventory: first host control-plane, the others worker; user deploy
	Bridge     string // the bridge's address, 10.251.0.1; the lab repository is http://Bridge:8080/
	Hosts      []Host
	// SudoPassword is the password of user "ops": password login over ssh, sudo asks for it.
	// User "deploy" has passwordless sudo.
	SudoPassword string

	id     string
	script string

	mu     sync.Mutex
	debian DebianMirror // once known
}

// Require skips the test unless the lab can run here: Linux, root, and debootstrap,
// systemd-nspawn and ip installed. GPUKIT_LAB=0 skips always; GPUKIT_LAB=1 makes the lab
// mandatory: missing tools are installed (lab.sh deps) and anything else missing fails the test.
func Require(t testing.TB) {
	t.Helper()
	mode := os.Getenv("GPUKIT_LAB")
	if mode == "0" {
		t.Skip("lab tests disabled (GPUKIT_LAB=0)")
	}
	unable := func(format string, args ...any) {
		t.Helper()
		if mode == "1" {
			t.Fatalf("lab required (GPUKIT_LAB=1) but "+format, args...)
		}
		t.Skipf("lab: "+format+" (GPUKIT_LAB=1 makes this a failure)", args...)
	}
	if runtime.GOOS != "linux" {
		unable("it runs on Linux only, not %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		unable("it needs root (network namespaces, mounts, a bridge); run the tests as root")
	}
	if missing := missingTools(); len(missing) > 0 {
		if mode != "1" {
			unable("%s not installed (sudo test/lab/lab.sh deps installs them)", strings.Join(missing, ", "))
		}
		script := scriptPath(t)
		if out, err := run(context.Background(), script, "", "deps"); err != nil {
			t.Fatalf("lab: installing %s: %v\n%s", strings.Join(missing, ", "), err, Tail(out))
		}
	}
}

func missingTools() []string {
	var missing []string
	for _, tool := range []string{"debootstrap", "systemd-nspawn", "ip", "ssh"} {
		if lookPath(tool) == "" {
			missing = append(missing, tool)
		}
	}
	return missing
}

// lookPath also looks in the sbin directories, which a test's PATH may lack.
func lookPath(tool string) string {
	if p, err := exec.LookPath(tool); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		if st, err := os.Stat(filepath.Join(dir, tool)); err == nil && st.Mode()&0o111 != 0 {
			return filepath.Join(dir, tool)
		}
	}
	return ""
}

// Start brings up a lab of its own with opts.Hosts hosts and waits until every host serves ssh
// (full hosts: until systemd finished booting). t.Cleanup tears it down; GPUKIT_LAB_KEEP=1
// keeps the lab of a failed test for a look (lab.sh --lab ID ssh NAME; lab.sh --lab ID release).
func Start(t testing.TB, opts Options) *Lab {
	t.Helper()
	Require(t)
	if opts.Hosts < 1 || opts.Hosts > 254 {
		t.Fatalf("lab: Options.Hosts must be 1..254, got %d", opts.Hosts)
	}
	args := []string{strconv.Itoa(opts.Hosts)}
	switch {
	case opts.Light && opts.Kube:
		t.Fatal("lab: Kube hosts are full hosts, not Light")
	case opts.Light:
		args = []string{"--light", strconv.Itoa(opts.Hosts)}
	case opts.Kube:
		args = []string{"--kube", strconv.Itoa(opts.Hosts)}
	}
	if opts.Fabric {
		if opts.Light {
			t.Fatal("lab: Fabric hosts are full hosts, not Light")
		}
		args = append([]string{"--fabric"}, args...)
	}
	l := start(t, nil, opts.Light, args...)
	if opts.Fabric {
		for i := range l.Hosts {
			// lab.sh's layout: the fabric's host N of lab L is 10.252.(2L).N, as 10.251.(2L).N
			l.Hosts[i].Fabric = "10.252." + strings.TrimPrefix(l.Hosts[i].Address, "10.251.")
		}
	}
	return l
}

// start is Start, after Require, for `lab.sh up ARGS` (a count or host names), with env added
// to lab.sh's environment (another GPUKIT_LAB_OWNER); the Lab has the hosts of one kind, light
// or full.
func start(t testing.TB, env []string, light bool, args ...string) *Lab {
	t.Helper()
	script := scriptPath(t)
	args = append([]string{"up"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout(t))
	defer cancel()
	began := time.Now()
	out, err := runEnv(ctx, script, "auto", env, args...)
	if err != nil {
		t.Fatalf("lab: %s: %v\n%s", strings.Join(args, " "), err, Tail(out))
	}
	inventory := lastLine(out)     // $GPUKIT_LAB_DIR/run/ID/inventory*.yaml
	if filepath.IsAbs(inventory) { // released even when reading the lab fails below
		dir := filepath.Dir(inventory)
		id := filepath.Base(dir)
		ours, err := claim(dir)
		if err != nil {
			run(context.Background(), script, id, "release")
			t.Fatalf("lab %s: %v", id, err)
		}
		t.Cleanup(func() {
			if !ours() {
				return // released by the test (or reaped): its id may be another test's lab by now
			}
			if t.Failed() && os.Getenv("GPUKIT_LAB_KEEP") == "1" {
				// no owner any more: neither the next Start nor the hosts' supervisors (which power
				// off the hosts of a test that is gone) take it down
				if out, err := run(context.Background(), script, id, "keep"); err != nil {
					t.Errorf("lab %s: keep: %v\n%s", id, err, Tail(out))
				}
				t.Logf("lab %s kept (GPUKIT_LAB_KEEP=1): %s --lab %s ssh NAME; %s --lab %s release", id, script, id, script, id)
				return
			}
			if out, err := run(context.Background(), script, id, "release"); err != nil {
				t.Errorf("lab %s: release: %v\n%s", id, err, Tail(out))
			}
		})
	}
	l, err := load(script, inventory, light)
	if err != nil {
		t.Fatalf("lab: %v\n%s", err, Tail(out))
	}
	t.Logf("lab %s: %d hosts up in %.1fs (%s)", l.id, len(l.Hosts), time.Since(began).Seconds(), l.Inventory)
	return l
}

// claim marks the lab in dir as this caller's with a file of random contents in it, which
// release removes with the lab; ours says whether that lab is still there. Lab ids are reused:
// once a lab is released, another test may get its id, and releasing the id again would take
// that test's lab down.
func claim(dir string) (ours func() bool, err error) {
	p := filepath.Join(dir, "claim")
	token := rand.Text()
	if err := os.WriteFile(p, []byte(token), 0o600); err != nil {
		return nil, err
	}
	return func() bool {
		b, err := os.ReadFile(p)
		return err == nil && string(b) == token
	}, nil
}

// startTimeout leaves room for a first run's base build (~1 min) within the test's deadline.
func startTimeout(t testing.TB) time.Duration {
	limit := 15 * time.Minute
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := d.Deadline(); ok {
			if left := time.Until(deadline) - 30*time.Second; left < limit {
				limit = max(left, time.Minute)
			}
		}
	}
	return limit
}

// load reads the lab that `up` reported: inventory path -> its directory, id, hosts, secrets.
func load(script, inventory string, light bool) (*Lab, error) {
	if !filepath.IsAbs(inventory) || !strings.HasSuffix(inventory, ".yaml") {
		return nil, fmt.Errorf("up did not end with an inventory path (got %q)", inventory)
	}
	dir := filepath.Dir(inventory)
	labDir := filepath.Dir(filepath.Dir(dir)) // $GPUKIT_LAB_DIR: dir is $GPUKIT_LAB_DIR/run/ID
	l := &Lab{
		Dir:        dir,
		KeyFile:    filepath.Join(labDir, "keys", "id_ed25519"),
		KnownHosts: filepath.Join(dir, "known_hosts"),
		Inventory:  inventory,
		Bridge:     "10.251.0.1",
		id:         filepath.Base(dir),
		script:     script,
	}
	tsv, err := os.ReadFile(filepath.Join(dir, "hosts.tsv"))
	if err != nil {
		return nil, err
	}
	kind := "full"
	if light {
		kind = "light"
	}
	for line := range strings.Lines(string(tsv)) {
		f := strings.Split(strings.TrimRight(line, "\n"), "\t")
		if len(f) == 3 && f[2] == kind {
			l.Hosts = append(l.Hosts, Host{Name: f[0], Address: f[1]})
		}
	}
	if len(l.Hosts) == 0 {
		return nil, fmt.Errorf("no %s hosts in %s", kind, filepath.Join(dir, "hosts.tsv"))
	}
	pw, err := os.ReadFile(filepath.Join(labDir, "secrets", "ops-password"))
	if err != nil {
		return nil, err
	}
	l.SudoPassword = strings.TrimRight(string(pw), "\n")
	return l, nil
}

// Open returns the lab of inventory, a lab made with the command line (lab.sh up: the
// demo's), with its full hosts. The lab stays as it is when the caller is done.
func Open(t testing.TB, inventory string) *Lab {
	t.Helper()
	abs, err := filepath.Abs(inventory)
	if err == nil {
		var l *Lab
		if l, err = load(scriptPath(t), abs, false); err == nil {
			return l
		}
	}
	t.Fatalf("lab: %v", err)
	return nil
}

// Stop powers host name off: sshd and every process go away, and its link goes down, so
// connections time out as they would for a machine that is off. The host keeps its disk and keys.
func (l *Lab) Stop(t testing.TB, name string) {
	t.Helper()
	l.hostCommand(t, "stop", name)
}

// StartHost boots a stopped host again, with the same host keys, and waits until it serves ssh.
func (l *Lab) StartHost(t testing.TB, name string) {
	t.Helper()
	l.hostCommand(t, "start", name)
}

// Rekey gives host name a new ssh host key and reloads its sshd; KnownHosts keeps the old key,
// so strict host key checking now fails for that host (the "host key changed" case).
func (l *Lab) Rekey(t testing.TB, name string) {
	t.Helper()
	l.hostCommand(t, "rekey", name)
}

// RebootNever as a reboot delay keeps a host that reboots down until StartHost: a machine that
// does not come back.
const RebootNever time.Duration = -1

// SetRebootDelay sets how long full host name stays down when it reboots (systemctl reboot,
// reboot, shutdown -r), from the moment its systemd-nspawn exits until it boots again; it also
// applies to a reboot under way. The default is GPUKIT_LAB_REBOOT_DELAY (seconds), else 3 s.
// RebootNever keeps the host down until StartHost. Delays are rounded down to microseconds.
func (l *Lab) SetRebootDelay(t testing.TB, name string, d time.Duration) {
	t.Helper()
	arg := "never"
	if d >= 0 {
		arg = fmt.Sprintf("%d.%06d", d/time.Second, (d%time.Second)/time.Microsecond)
	}
	l.hostCommand(t, "reboot-delay", name, arg)
}

// BootID returns host name's /proc/sys/kernel/random/boot_id, read over ssh: a new one every boot.
func (l *Lab) BootID(t testing.TB, name string) string {
	t.Helper()
	return l.SSH(t, name, "cat /proc/sys/kernel/random/boot_id")
}

// State says what host name is doing: "running" (powered on: booting or booted), "rebooting"
// (down for its reboot delay), "down" (rebooted with RebootNever: off until StartHost), "off"
// (powered off from inside, e.g. systemctl poweroff) or "stopped" (Stop).
func (l *Lab) State(t testing.TB, name string) string {
	t.Helper()
	return lastLine(l.hostCommand(t, "state", name))
}

// Reboot makes host name reboot the way gpukit does, with `systemctl reboot` over ssh, and
// returns once the host has gone down (it comes back after its reboot delay; BootID changes).
func (l *Lab) Reboot(t testing.TB, name string) {
	t.Helper()
	l.rebootWith(t, name, "systemctl reboot")
}

// rebootWith runs cmd (systemctl reboot, reboot, shutdown -r now) on host name as root and
// waits until the host has gone down.
func (l *Lab) rebootWith(t testing.TB, name, cmd string) {
	t.Helper()
	_, boots := l.bootState(name)
	if out, err := l.command("root", name, cmd).CombinedOutput(); err != nil {
		// ssh exits 255 when the host closes the connection while going down
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 255 {
			t.Fatalf("lab %s: %s on %s: %v\n%s", l.id, cmd, name, err, out)
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if state, b := l.bootState(name); state != "" && (state != "running" || b != boots) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lab %s: %s did not go down within 2 min of %s", l.id, name, cmd)
		}
	}
}

// bootState reads what the host's supervisor wrote: its state and how often it booted.
func (l *Lab) bootState(name string) (string, int) {
	b, err := os.ReadFile(filepath.Join(l.Dir, "hosts", name, "state"))
	if err != nil {
		return "", 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return "", 0
	}
	n, _ := strconv.Atoi(f[1])
	return f[0], n
}

// DebianMirror is the lab's Debian package proxy (apt-cacher-ng on the bridge), which serves
// Debian from this machine's mirror to lab hosts, like an air-gapped site's local mirror, and
// caches it in $GPUKIT_LAB_DIR/debian-mirror (kept by lab.sh down). Hosts are not configured to
// use it; apt checks Debian's signatures as usual (the hosts have debian-archive-keyring).
type DebianMirror struct {
	// Debian is the mirror of the Debian archive: suites bookworm and bookworm-updates,
	// components main contrib non-free non-free-firmware (http://10.251.0.1:3143/debian).
	Debian string
	// Security is the mirror of the security archive: bookworm-security (.../debian-security).
	Security string
	// Proxy is the same service as an http proxy (Acquire::http::Proxy), for sources that name
	// deb.debian.org/debian, deb.debian.org/debian-security or security.debian.org.
	Proxy string
	// Sources is a deb822 sources file (/etc/apt/sources.list.d/debian.sources) for both
	// mirrors, with Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg.
	Sources string
}

// DebianMirror starts the lab's Debian package proxy if it is not running, checks that this
// machine's Debian mirror answers through it (the test fails with the reason if not), and
// returns its URLs.
func (l *Lab) DebianMirror(t testing.TB) DebianMirror {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.debian.Sources != "" {
		return l.debian
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := run(ctx, l.script, l.id, "debian-mirror", "sources")
	if err != nil {
		t.Fatalf("lab: Debian mirror: %v\n%s", err, Tail(out))
	}
	var m DebianMirror
	for line := range strings.Lines(string(out)) {
		if u, ok := strings.CutPrefix(strings.TrimSpace(line), "URIs: "); ok {
			switch {
			case strings.HasSuffix(u, "/debian"):
				m.Debian, m.Proxy = u, strings.TrimSuffix(u, "debian")
			case strings.HasSuffix(u, "/debian-security"):
				m.Security = u
			}
		}
		if !strings.HasPrefix(line, "lab: ") {
			m.Sources += line // the file itself, without lab.sh's log lines (stderr)
		}
	}
	if m.Debian == "" || m.Security == "" {
		t.Fatalf("lab: debian-mirror printed no mirror URLs:\n%s", Tail(out))
	}
	l.debian = m
	return m
}

// UseDebianMirror points host name's apt at the lab's Debian package proxy: it writes
// DebianMirror().Sources to /etc/apt/sources.list.d/debian.sources. Run apt-get update next.
// (gpukit's own phases configure package sources on hosts; this is for tests that just need
// Debian packages.)
func (l *Lab) UseDebianMirror(t testing.TB, name string) {
	t.Helper()
	m := l.DebianMirror(t)
	l.SSH(t, name, "echo "+base64.StdEncoding.EncodeToString([]byte(m.Sources))+
		" | base64 -d >/etc/apt/sources.list.d/debian.sources")
}

func (l *Lab) hostCommand(t testing.TB, command, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := run(ctx, l.script, l.id, append([]string{command, name}, args...)...)
	if err != nil {
		t.Fatalf("lab %s: %s %s: %v\n%s", l.id, command, name, err, Tail(out))
	}
	return out
}

// SSH runs cmd on host name ("lab-1", or "user@lab-1"; default user root) with the system ssh
// client, the lab key and StrictHostKeyChecking=yes against KnownHosts, and returns its standard
// output without surrounding white space. A failure of ssh or of cmd fails the test.
func (l *Lab) SSH(t testing.TB, name, cmd string) string {
	t.Helper()
	return l.SSHWithin(t, name, cmd, 5*time.Minute)
}

// SSHWithin is SSH with its own bound, for commands that really take long on a loaded machine
// (a DKMS build of the NVIDIA module takes minutes on 2 cores beside other lab tests).
func (l *Lab) SSHWithin(t testing.TB, name, cmd string, limit time.Duration) string {
	t.Helper()
	user, host := "root", name
	if i := strings.LastIndex(name, "@"); i >= 0 {
		user, host = name[:i], name[i+1:]
	}
	addr := l.address(host)
	if addr == "" {
		t.Fatalf("lab %s: no host %q (hosts: %v)", l.id, host, l.Hosts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	c := exec.CommandContext(ctx, "ssh", append(l.sshOptions(), user+"@"+addr, cmd)...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("lab %s: ssh %s@%s %q: %v\nstdout: %s\nstderr: %s", l.id, user, host, cmd, err, Tail(stdout.Bytes()), Tail(stderr.Bytes()))
	}
	return strings.TrimSpace(stdout.String())
}

// SSHCommand is the command SSH runs as root on name, for a caller that must handle its failure
// itself (a goroutine, which cannot fail the test).
func (l *Lab) SSHCommand(name, cmd string) *exec.Cmd { return l.command("root", name, cmd) }

// command is the ssh command line SSH runs (user@name), for callers that handle its failure.
func (l *Lab) command(user, name, cmd string, extra ...string) *exec.Cmd {
	args := append(extra, l.sshOptions()...) // ssh takes the first value of an option
	return exec.Command("ssh", append(args, user+"@"+l.address(name), cmd)...)
}

// sshOptions are the system ssh client's options for lab hosts: nothing from ~/.ssh or
// /etc/ssh, the lab key only, strict host key checking against the lab's known_hosts.
func (l *Lab) sshOptions() []string {
	return []string{
		"-F", "/dev/null", "-i", l.KeyFile, "-o", "IdentitiesOnly=yes",
		"-o", "UserKnownHostsFile=" + l.KnownHosts, "-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
		"-o", "LogLevel=ERROR",
	}
}

func (l *Lab) address(name string) string {
	for _, h := range l.Hosts {
		if h.Name == name {
			return h.Address
		}
	}
	return ""
}

// scriptPath writes the embedded lab.sh to $GPUKIT_LAB_DIR/bin/lab-<hash>.sh (once per
// version, atomically: running labs keep reading the file they started with) and returns it.
func scriptPath(t testing.TB) string {
	t.Helper()
	p, err := installScript(labDir())
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	return p
}

func labDir() string {
	if d := os.Getenv("GPUKIT_LAB_DIR"); d != "" {
		return d
	}
	return "/var/tmp/gpukit-lab"
}

// run runs lab.sh with GPUKIT_LAB_ID=id ("" keeps the default) and returns stdout and stderr
// together. Cancelling ctx sends SIGTERM to lab.sh's process group, so that its traps remove
// what it was creating, and SIGKILL a minute later.
func run(ctx context.Context, script, id string, args ...string) ([]byte, error) {
	return runEnv(ctx, script, id, nil, args...)
}

// runEnv is run with env added to lab.sh's environment (its values win).
func runEnv(ctx context.Context, script, id string, env []string, args ...string) ([]byte, error) {
	c := exec.CommandContext(ctx, script, args...)
	c.Env = append(os.Environ(), "GPUKIT_LAB_OWNER="+strconv.Itoa(os.Getpid()))
	if id != "" {
		c.Env = append(c.Env, "GPUKIT_LAB_ID="+id)
	}
	c.Env = append(c.Env, env...) // exec takes the last value of a name
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	setProcessGroup(c)
	c.WaitDelay = time.Minute
	err := c.Run()
	return out.Bytes(), err
}

func lastLine(out []byte) string {
	var last string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			last = s
		}
	}
	return last
}

// tail keeps the end of a long output for an error message.
func Tail(out []byte) string {
	const max = 4000
	if len(out) > max {
		return "..." + string(out[len(out)-max:])
	}
	return string(out)
}

// LabDir is the lab directory ($GPUKIT_LAB_DIR) that l belongs to: l.Dir is
// LabDir/run/ID. Its repo/www is the lab repository's web root.
func (l *Lab) LabDir() string { return filepath.Dir(filepath.Dir(l.Dir)) }

// Registry starts the lab's container registry (lab.sh registry) and returns its address,
// 10.251.0.1:5000: plain HTTP, on the bridge only, like an air-gapped site's image mirror.
func (l *Lab) Registry(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := run(ctx, l.script, l.id, "registry")
	if err != nil {
		t.Fatalf("lab %s: registry: %v\n%s", l.id, err, Tail(out))
	}
	return lastLine(out)
}

// SiteProxy is the lab's stand-in for a site's HTTP proxy: squid on the bridge, logging every
// request with its client's address.
type SiteProxy struct {
	// URL is http://10.251.0.1:3128.
	URL string
	// AccessLog is squid's access log (native format: time, elapsed, client, code/status,
	// bytes, method, URL, ...), shared by every lab.
	AccessLog string
}

// Proxy starts the lab's HTTP proxy (lab.sh proxy) if it is not running and returns it.
func (l *Lab) Proxy(t testing.TB) SiteProxy {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := run(ctx, l.script, l.id, "proxy")
	if err != nil {
		t.Fatalf("lab %s: proxy: %v\n%s", l.id, err, Tail(out))
	}
	var p SiteProxy
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "url "); ok {
			p.URL = v
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "access-log "); ok {
			p.AccessLog = v
		}
	}
	if p.URL == "" || p.AccessLog == "" {
		t.Fatalf("lab %s: proxy printed no URL and log:\n%s", l.id, Tail(out))
	}
	return p
}

// CutOff takes this lab's hosts' direct way to the bridge's ports away (lab.sh direct off), as
// at a site whose hosts reach the outside only through its proxy; the test's end gives it back.
func (l *Lab) CutOff(t testing.TB, ports ...int) {
	t.Helper()
	args := []string{"off"}
	for _, p := range ports {
		args = append(args, strconv.Itoa(p))
	}
	l.hostCommand(t, "direct", args[0], args[1:]...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := run(ctx, l.script, l.id, append([]string{"direct", "on"}, args[1:]...)...); err != nil {
			t.Errorf("lab %s: direct on: %v\n%s", l.id, err, Tail(out))
		}
	})
}

// PushImage pushes the directory dir as a one-layer image ref (name:tag) to the lab registry,
// with entrypoint, and returns its manifest digest.
func (l *Lab) PushImage(t testing.TB, ref, dir string, entrypoint ...string) string {
	t.Helper()
	return lastLine(l.hostCommand(t, "registry", "push", append([]string{ref, dir}, entrypoint...)...))
}
