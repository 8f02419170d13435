// Package preflight judges whether hosts are ready for gpukit: every check
// looks at probed facts (pkg/facts) against the inventory and says pass, warn
// or fail with a reason an operator can act on.
package preflight

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/nvidia"
	"github.com/gpukit/gpukit/pkg/osfamily"
)

// Status of one check.
type Status string

const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result is one check on one host.
type Result struct {
	Host   string `json:"host"`
	Check  string `json:"check"`
	Status Status `json:"status"`
	Reason string `json:"reason"`
}

const (
	minControlPlaneCPUs = 2    // kubeadm refuses fewer
	minControlPlaneMiB  = 1700 // kubeadm's memory preflight
	warnRootFreeGiB     = 20   // driver + CUDA toolkit + images
	failRootFreeGiB     = 5
)

// CheckHost runs every per-host check.
func CheckHost(inv *inventory.Inventory, m inventory.Machine, f *facts.Facts) []Result {
	c := checker{inv: inv, m: m, f: f}
	c.os()
	c.arch()
	c.cpuMemory()
	c.swap()
	c.disk()
	c.gpus()
	c.nouveau()
	w, err := nvidia.Decide(inv, m, f)
	c.secureBoot(w, err)
	c.nvidia(w, err)
	c.runtimes()
	c.initSystem()
	c.timeSync()
	c.ports()
	c.hostname()
	c.nodeAddress()
	return c.out
}

type checker struct {
	inv *inventory.Inventory
	m   inventory.Machine
	f   *facts.Facts
	out []Result
}

func (c *checker) add(check string, s Status, format string, args ...any) {
	c.out = append(c.out, Result{Host: c.m.Name, Check: check, Status: s, Reason: fmt.Sprintf(format, args...)})
}

func (c *checker) orchestrator() inventory.Orchestrator { return c.inv.Cluster.Spec.Orchestrator }

// leader is a control plane (kubernetes) or a manager (swarm).
func (c *checker) leader() bool {
	return c.m.HasRole(inventory.RoleControlPlane) || c.m.HasRole(inventory.RoleManager)
}

func (c *checker) os() {
	_, err := c.f.OS.Family()
	var ue *osfamily.UnsupportedError
	switch {
	case err == nil:
		c.add("os", Pass, "%s", describeOS(c.f))
	case errors.As(err, &ue) && len(ue.Versions) > 0:
		c.add("os", Fail, "%s is not supported: %s versions supported: %s", describeOS(c.f), ue.ID, strings.Join(ue.Versions, ", "))
	default:
		c.add("os", Fail, "%s is not supported: gpukit installs on %s", describeOS(c.f), osfamily.Supported())
	}
}

func describeOS(f *facts.Facts) string {
	if f.OS.Pretty != "" {
		return f.OS.Pretty
	}
	return f.OS.ID + " " + f.OS.Version
}

func (c *checker) arch() {
	switch c.f.Arch {
	case "x86_64":
		c.add("arch", Pass, "x86_64, kernel %s", c.f.Kernel)
	case "aarch64":
		c.add("arch", Warn, "aarch64 (kernel %s): NVIDIA's repository path for ARM servers (sbsa) is less tested", c.f.Kernel)
	default:
		c.add("arch", Fail, "%s: NVIDIA publishes drivers for x86_64 and aarch64 only", c.f.Arch)
	}
}

func (c *checker) cpuMemory() {
	mib := c.f.MemKiB / 1024
	switch {
	case c.leader() && c.orchestrator() == inventory.Kubernetes && c.f.CPUs < minControlPlaneCPUs:
		c.add("cpu", Fail, "%d CPU: a control plane needs at least %d", c.f.CPUs, minControlPlaneCPUs)
	default:
		c.add("cpu", Pass, "%d CPUs", c.f.CPUs)
	}
	switch {
	case c.leader() && c.orchestrator() == inventory.Kubernetes && mib < minControlPlaneMiB:
		c.add("memory", Fail, "%d MiB: a control plane needs at least %d MiB", mib, minControlPlaneMiB)
	default:
		c.add("memory", Pass, "%.1f GiB", float64(c.f.MemKiB)/(1<<20))
	}
}

func (c *checker) swap() {
	switch {
	case c.f.SwapKiB == 0:
		c.add("swap", Pass, "off")
	case c.orchestrator() == inventory.Kubernetes:
		c.add("swap", Warn, "%d MiB of swap on: init turns it off (kubelet requires it)", c.f.SwapKiB/1024)
	default:
		c.add("swap", Pass, "%d MiB of swap", c.f.SwapKiB/1024)
	}
}

func (c *checker) disk() {
	gib := float64(c.f.RootFree) / (1 << 20)
	switch {
	case gib < failRootFreeGiB:
		c.add("disk", Fail, "%.1f GiB free on /: the NVIDIA driver and CUDA need at least %d GiB", gib, failRootFreeGiB)
	case gib < warnRootFreeGiB:
		c.add("disk", Warn, "%.1f GiB free on /: %d GiB or more leaves room for container images", gib, warnRootFreeGiB)
	default:
		c.add("disk", Pass, "%.0f GiB free on /, %d disk(s)", gib, len(c.f.Disks))
	}
}

func (c *checker) gpus() {
	f := c.f
	want := c.inv.Cluster.Spec.Versions.NvidiaDriver
	switch {
	case f.NvidiaSMIError != "":
		if strings.Contains(f.NvidiaSMIError, "version mismatch") {
			c.add("gpu", Warn, "nvidia-smi: %s: the driver was upgraded without a reboot; init reboots the host", f.NvidiaSMIError)
		} else {
			c.add("gpu", Warn, "nvidia-smi fails: %s", f.NvidiaSMIError)
		}
	case len(f.GPUs) > 0:
		g, unlisted := f.GPUs[0], f.Unlisted()
		desc := fmt.Sprintf("%d× %s (%d MiB), driver %s", len(f.GPUs), g.Name, g.MemMiB, g.Driver)
		if g.MIGMode != "" {
			desc += ", MIG " + g.MIGMode
		}
		switch {
		case len(unlisted) > 0:
			var missing []string
			for _, d := range unlisted {
				missing = append(missing, strings.TrimSpace(d.Address+" "+d.DeviceID))
			}
			c.add("gpu", Warn, "%s, but %d NVIDIA GPUs on the PCI bus: nvidia-smi does not list %s (not visible to the driver: fallen off the bus, or a generation its branch does not drive)",
				desc, len(f.PCIGPUs), strings.Join(missing, ", "))
		case want != "" && !driverMatches(g.Driver, want):
			c.add("gpu", Warn, "%s; inventory asks for %s: init will change the driver", desc, want)
		default:
			c.add("gpu", Pass, "%s", desc)
		}
	case len(f.PCIGPUs) > 0:
		c.add("gpu", Pass, "%d NVIDIA GPU(s) on the PCI bus (%s), no driver yet", len(f.PCIGPUs), f.PCIGPUs[0].DeviceID)
	case c.leader() && !c.m.HasRole(inventory.RoleWorker):
		c.add("gpu", Pass, "no NVIDIA GPU (fine for a %s)", c.m.Roles[0])
	default:
		c.add("gpu", Warn, "no NVIDIA GPU found on the PCI bus: the host joins without the GPU stack")
	}
}

// driverMatches accepts an exact version or a branch ("580" matches 580.95.05).
func driverMatches(have, want string) bool {
	return have == want || strings.HasPrefix(have, want+".")
}

func (c *checker) nouveau() {
	if c.f.NouveauLoaded {
		c.add("nouveau", Warn, "nouveau is loaded: init blacklists it, which needs a reboot")
		return
	}
	c.add("nouveau", Pass, "not loaded")
}

// secureBoot reports what Secure Boot means for the driver; whether the
// inventory's choice (spec.nvidia.secureBoot) can work on the host is the
// NVIDIA layer's decision (nvidia.Decide), not a second copy of it.
func (c *checker) secureBoot(w nvidia.Want, err error) {
	var sb *nvidia.SecureBootError
	switch {
	case !c.f.SecureBootEnabled():
		c.add("secure-boot", Pass, "%s", c.f.SecureBoot)
	case errors.As(err, &sb):
		c.add("secure-boot", Fail, "%s: %s", c.f.SecureBoot, sb.Msg)
	case err != nil:
		c.add("secure-boot", Warn, "%s: what it means for the driver depends on the nvidia check", c.f.SecureBoot)
	case !w.GPU:
		c.add("secure-boot", Pass, "%s; no NVIDIA GPU, so no driver module to sign", c.f.SecureBoot)
	case w.DKMS: // mok
		c.add("secure-boot", Warn, "%s: DKMS signs the driver with its Machine Owner Key; enroll it at the console (mokutil --import /var/lib/dkms/mok.pub, then confirm at the next boot) or the module will not load", c.f.SecureBoot)
	default:
		c.add("secure-boot", Warn, "%s: the driver uses modules signed by the OS vendor (spec.nvidia.secureBoot: signed)", c.f.SecureBoot)
	}
}

// nvidia reports what the NVIDIA layer will install on the host, or why it
// cannot (Secure Boot is the secure-boot check's).
func (c *checker) nvidia(w nvidia.Want, err error) {
	var sb *nvidia.SecureBootError
	switch {
	case errors.As(err, &sb):
	case err != nil:
		c.add("nvidia", Fail, "%v", err)
	case !w.GPU:
	default:
		msg := fmt.Sprintf("driver %s, %s kernel modules (%s), from %s", w.Driver, w.Flavor, w.Why, w.Source)
		if w.CUDA != "" {
			msg += ", CUDA toolkit " + w.CUDA
		}
		c.add("nvidia", Pass, "%s", msg)
	}
}

func (c *checker) runtimes() {
	have := strings.Join(c.f.Runtimes, "; ")
	if have == "" {
		c.add("runtime", Pass, "none installed yet")
		return
	}
	if c.orchestrator() == inventory.Kubernetes && hasRuntime(c.f, "dockerd") {
		c.add("runtime", Warn, "%s: Kubernetes uses containerd; Docker stays but is not configured for Kubernetes", have)
		return
	}
	c.add("runtime", Pass, "%s", have)
}

func hasRuntime(f *facts.Facts, name string) bool {
	for _, r := range f.Runtimes {
		if strings.HasPrefix(r, name+" ") || r == name {
			return true
		}
	}
	return false
}

func (c *checker) initSystem() {
	if c.f.Init == "systemd" {
		c.add("init", Pass, "systemd")
		return
	}
	c.add("init", Fail, "PID 1 is %q, not systemd: the driver, container runtime and kubelet are systemd services", c.f.Init)
}

func (c *checker) timeSync() {
	switch {
	case c.f.TimeSynced == "yes":
		c.add("time-sync", Pass, "synchronised (%s)", orUnknown(c.f.TimeSyncService))
	case c.f.TimeSynced == "no" && c.f.TimeSyncService != "":
		c.add("time-sync", Warn, "%s runs but the clock is not synchronised yet: certificates and etcd need agreeing clocks", c.f.TimeSyncService)
	case c.f.TimeSynced == "no":
		c.add("time-sync", Warn, "no time synchronisation service: certificates and etcd need agreeing clocks (install chrony)")
	default:
		c.add("time-sync", Warn, "time synchronisation state unknown (no timedatectl)")
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "service unknown"
	}
	return s
}

// requiredPorts are the TCP ports gpukit's orchestrators will listen on.
func (c *checker) requiredPorts() []int {
	switch {
	case c.orchestrator() == inventory.Swarm && c.m.HasRole(inventory.RoleManager):
		return []int{2377, 7946}
	case c.orchestrator() == inventory.Swarm:
		return []int{7946}
	case c.m.HasRole(inventory.RoleControlPlane):
		return []int{6443, 2379, 2380, 10250, 10257, 10259}
	default:
		return []int{10250}
	}
}

func (c *checker) ports() {
	var busy []string
	want := c.requiredPorts()
	for _, p := range want {
		if c.f.Listening(p) {
			busy = append(busy, fmt.Sprint(p))
		}
	}
	if len(busy) > 0 && c.orchestrator() == inventory.Swarm && c.f.Swarm == "active" {
		c.add("ports", Pass, "TCP port(s) %s in use by this host's swarm node", strings.Join(busy, ", "))
		return
	}
	if len(busy) > 0 && c.orchestrator() == inventory.Kubernetes && c.f.KubeletServer != "" {
		// Whether it is this cluster's node, the Kubernetes phases decide
		// (one of another cluster is refused there, with the reset to run).
		c.add("ports", Pass, "TCP port(s) %s in use by this host's Kubernetes node (API %s)", strings.Join(busy, ", "), c.f.KubeletServer)
		return
	}
	if len(busy) > 0 {
		c.add("ports", Fail, "TCP port(s) %s already in use", strings.Join(busy, ", "))
		return
	}
	c.add("ports", Pass, "%d required TCP ports free", len(want))
}

func (c *checker) hostname() {
	if c.f.Hostname != c.m.Name {
		c.add("hostname", Warn, "hostname is %q, inventory says %q: the node registers as %q", c.f.Hostname, c.m.Name, c.m.Name)
		return
	}
	c.add("hostname", Pass, "%s", c.f.Hostname)
}

// nodeAddress: the address the cluster will know the host by is one of
// its own (a typo would surface only in kubeadm or swarm, after the
// install). Only when it is not the SSH address, which reached the host.
func (c *checker) nodeAddress() {
	ip := c.m.NodeAddress
	if ip == "" {
		return
	}
	if len(c.f.Addresses) == 0 {
		c.add("node-address", Warn, "node address %s not checked: the host did not list its addresses (no ip command)", ip)
		return
	}
	if dev := c.f.Interface(ip); dev != "" {
		c.add("node-address", Pass, "%s on %s", ip, dev)
		return
	}
	var have []string
	for _, a := range c.f.Addresses {
		have = append(have, a.Address+" ("+a.Interface+")")
	}
	c.add("node-address", Fail, "node address %s is not on this host; its addresses: %s", ip, strings.Join(have, ", "))
}

// CheckCluster compares hosts with each other: Kubernetes and Swarm need
// unique hostnames, product_uuids and machine-ids (cloned images often
// share them).
func CheckCluster(byHost map[string]*facts.Facts) []Result {
	var out []Result
	unique := func(check string, value func(*facts.Facts) string, what string) {
		seen := map[string][]string{}
		for host, f := range byHost {
			if v := value(f); v != "" {
				seen[v] = append(seen[v], host)
			}
		}
		for v, hosts := range seen {
			if len(hosts) < 2 {
				continue
			}
			sort.Strings(hosts)
			for _, h := range hosts {
				out = append(out, Result{Host: h, Check: check, Status: Fail,
					Reason: fmt.Sprintf("%s %s is shared by %s", what, v, strings.Join(hosts, ", "))})
			}
		}
	}
	unique("unique-hostname", func(f *facts.Facts) string { return f.Hostname }, "hostname")
	unique("unique-product-uuid", func(f *facts.Facts) string { return f.ProductUUID }, "product_uuid")
	unique("unique-machine-id", func(f *facts.Facts) string { return f.MachineID }, "machine-id")
	sort.Slice(out, func(i, j int) bool {
		if out[i].Host != out[j].Host {
			return out[i].Host < out[j].Host
		}
		return out[i].Check < out[j].Check
	})
	return out
}
