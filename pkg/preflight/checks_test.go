package preflight

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/pkg/facts"
	"github.com/gpukit/gpukit/pkg/inventory"
)

func healthy() *facts.Facts {
	return &facts.Facts{
		OS: facts.OS{ID: "ubuntu", Version: "24.04", Pretty: "Ubuntu 24.04.1 LTS"}, Kernel: "6.8.0-45-generic",
		Arch: "x86_64", Hostname: "gpu-001", CPUs: 64, MemKiB: 512 << 20, RootFree: 800 << 20,
		PCIGPUs: []facts.PCIDevice{{Address: "0000:17:00.0", DeviceID: "0x2330"}}, SecureBoot: "SecureBoot disabled",
		Init: "systemd", TimeSynced: "yes", TimeSyncService: "chrony", ListeningTCP: []int{22},
	}
}

// testInventory is a loaded inventory (every default applied) with the
// given choices; empty ones keep their default.
func testInventory(o inventory.Orchestrator, driver string, nvidia ...string) *inventory.Inventory {
	lead := "control-plane"
	if o == inventory.Swarm {
		lead = "manager"
	}
	doc := fmt.Sprintf("apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: t}\nspec:\n  orchestrator: %s\n"+
		"  hosts:\n  - {name: gpu-001, address: 10.0.0.1, roles: [%s, worker]}\n", o, lead)
	if len(nvidia) > 0 && nvidia[0] != "" {
		doc += "  nvidia: {" + nvidia[0] + "}\n"
	}
	if driver != "" {
		doc += fmt.Sprintf("  versions: {nvidiaDriver: %q, cuda: \"12.2\"}\n", driver)
	}
	inv, err := inventory.Parse("t.yaml", []byte(doc))
	if err != nil {
		panic(err)
	}
	return inv
}

func TestCheckHost(t *testing.T) {
	worker := inventory.Machine{Name: "gpu-001", Roles: []inventory.Role{inventory.RoleWorker}}
	cp := inventory.Machine{Name: "gpu-001", Roles: []inventory.Role{inventory.RoleControlPlane}}
	manager := inventory.Machine{Name: "gpu-001", Roles: []inventory.Role{inventory.RoleManager}}
	fabric := inventory.Machine{Name: "gpu-001", Address: "10.0.0.1", NodeAddress: "10.10.0.1", Roles: []inventory.Role{inventory.RoleWorker}}
	h100 := facts.GPU{Index: 0, UUID: "GPU-1", Name: "NVIDIA H100 80GB HBM3", MemMiB: 81559, Driver: "590.48.01", MIGMode: "Disabled"}
	tests := []struct {
		name       string
		orch       inventory.Orchestrator
		driver     string
		secureBoot string
		source     string
		m          inventory.Machine
		mutate     func(*facts.Facts)
		check      string
		want       Status
		reason     string
	}{
		{name: "healthy ubuntu", m: worker, check: "os", want: Pass, reason: "Ubuntu 24.04.1 LTS"},
		{name: "node address on the fabric NIC", m: fabric, mutate: func(f *facts.Facts) {
			f.Addresses = []facts.IfAddr{{Interface: "eno1", Address: "10.0.0.1"}, {Interface: "ib0", Address: "10.10.0.1"}}
		}, check: "node-address", want: Pass, reason: "10.10.0.1 on ib0"},
		{name: "node address not on the host", m: fabric, mutate: func(f *facts.Facts) {
			f.Addresses = []facts.IfAddr{{Interface: "eno1", Address: "10.0.0.1"}}
		}, check: "node-address", want: Fail, reason: "node address 10.10.0.1 is not on this host; its addresses: 10.0.0.1 (eno1)"},
		{name: "node address unchecked without ip", m: fabric, check: "node-address", want: Warn, reason: "not checked"},
		{name: "debian 12 point release", m: worker, mutate: func(f *facts.Facts) { f.OS = facts.OS{ID: "debian", Version: "12"} }, check: "os", want: Pass},
		{name: "rocky 9.4", m: worker, mutate: func(f *facts.Facts) { f.OS = facts.OS{ID: "rocky", Version: "9.4"} }, check: "os", want: Pass},
		{name: "ubuntu 20.04 unsupported", m: worker, mutate: func(f *facts.Facts) { f.OS = facts.OS{ID: "ubuntu", Version: "20.04"} }, check: "os", want: Fail, reason: "versions supported: 22.04, 24.04"},
		{name: "arch linux unsupported", m: worker, mutate: func(f *facts.Facts) { f.OS = facts.OS{ID: "arch", Version: "rolling"} }, check: "os", want: Fail},
		{name: "arm warns", m: worker, mutate: func(f *facts.Facts) { f.Arch = "aarch64" }, check: "arch", want: Warn, reason: "sbsa"},
		{name: "ppc fails", m: worker, mutate: func(f *facts.Facts) { f.Arch = "ppc64le" }, check: "arch", want: Fail},
		{name: "1 cpu control plane", m: cp, mutate: func(f *facts.Facts) { f.CPUs = 1 }, check: "cpu", want: Fail, reason: "at least 2"},
		{name: "1 cpu worker ok", m: worker, mutate: func(f *facts.Facts) { f.CPUs = 1 }, check: "cpu", want: Pass},
		{name: "small control plane", m: cp, mutate: func(f *facts.Facts) { f.MemKiB = 1 << 20 }, check: "memory", want: Fail, reason: "1700 MiB"},
		{name: "swap on kubernetes", m: worker, mutate: func(f *facts.Facts) { f.SwapKiB = 8 << 20 }, check: "swap", want: Warn, reason: "turns it off"},
		{name: "swap on swarm", orch: inventory.Swarm, m: worker, mutate: func(f *facts.Facts) { f.SwapKiB = 8 << 20 }, check: "swap", want: Pass},
		{name: "tight disk", m: worker, mutate: func(f *facts.Facts) { f.RootFree = 10 << 20 }, check: "disk", want: Warn},
		{name: "full disk", m: worker, mutate: func(f *facts.Facts) { f.RootFree = 1 << 20 }, check: "disk", want: Fail},
		{name: "gpu on bus, no driver", m: worker, check: "gpu", want: Pass, reason: "no driver yet"},
		{name: "no gpu worker", m: worker, mutate: func(f *facts.Facts) { f.PCIGPUs = nil }, check: "gpu", want: Warn, reason: "no NVIDIA GPU"},
		{name: "no gpu control plane", m: cp, mutate: func(f *facts.Facts) { f.PCIGPUs = nil }, check: "gpu", want: Pass},
		{name: "driver as requested (branch)", driver: "590", m: worker, mutate: func(f *facts.Facts) { f.GPUs = []facts.GPU{h100} }, check: "gpu", want: Pass, reason: "1× NVIDIA H100 80GB HBM3 (81559 MiB), driver 590.48.01, MIG Disabled"},
		{name: "driver differs", driver: "580.95.05", m: worker, mutate: func(f *facts.Facts) { f.GPUs = []facts.GPU{h100} }, check: "gpu", want: Warn, reason: "init will change the driver"},
		{name: "gpu fell off the bus", m: worker, mutate: func(f *facts.Facts) {
			f.GPUs = []facts.GPU{h100}
			f.PCIGPUs = append(f.PCIGPUs, facts.PCIDevice{Address: "0000:18:00.0"})
		}, check: "gpu", want: Warn, reason: "not visible to the driver"},
		{name: "version mismatch", m: worker, mutate: func(f *facts.Facts) {
			f.NvidiaSMI, f.NvidiaSMIError = true, "Failed to initialize NVML: Driver/library version mismatch"
		}, check: "gpu", want: Warn, reason: "without a reboot"},
		{name: "nouveau", m: worker, mutate: func(f *facts.Facts) { f.NouveauLoaded = true }, check: "nouveau", want: Warn},
		{name: "secure boot refused", m: worker, mutate: func(f *facts.Facts) { f.SecureBoot = "SecureBoot enabled" }, check: "secure-boot", want: Fail, reason: "choose spec.nvidia.secureBoot: signed or mok"},
		{name: "secure boot without gpu", m: worker, mutate: func(f *facts.Facts) { f.SecureBoot = "SecureBoot enabled"; f.PCIGPUs = nil }, check: "secure-boot", want: Pass, reason: "no driver module"},
		{name: "secure boot with mok", secureBoot: "mok", m: worker, mutate: func(f *facts.Facts) { f.SecureBoot = "SecureBoot enabled" }, check: "secure-boot", want: Warn, reason: "mokutil --import"},
		{name: "secure boot signed on ubuntu", secureBoot: "signed", m: worker, mutate: func(f *facts.Facts) { f.SecureBoot = "SecureBoot enabled" }, check: "secure-boot", want: Warn, reason: "signed by the OS vendor"},
		{name: "secure boot signed on debian refused", secureBoot: "signed", m: worker, mutate: func(f *facts.Facts) {
			f.SecureBoot, f.OS = "SecureBoot enabled", facts.OS{ID: "debian", Version: "12"}
		}, check: "secure-boot", want: Fail, reason: "Debian 12 offers no vendor-signed NVIDIA modules"},
		{name: "nvidia decision", m: worker, check: "nvidia", want: Pass, reason: "driver 580.95.05, open kernel modules (every GPU is Turing or newer), from cuda-repo"},
		{name: "volta gets proprietary modules", m: worker, mutate: func(f *facts.Facts) { f.PCIGPUs[0].DeviceID = "0x1db4" }, check: "nvidia", want: Pass, reason: "proprietary kernel modules (GPU 0000:17:00.0 (device 0x1db4) is Volta, older than Turing)"},
		{name: "no distribution driver on rhel", source: "distribution", m: worker, mutate: func(f *facts.Facts) { f.OS = facts.OS{ID: "rocky", Version: "9.4"} }, check: "nvidia", want: Fail, reason: "RHEL/Rocky/Alma 9 has no NVIDIA driver packages of its own"},
		{name: "docker beside kubernetes", m: worker, mutate: func(f *facts.Facts) { f.Runtimes = []string{"dockerd Docker version 28.2.2"} }, check: "runtime", want: Warn},
		{name: "not systemd", m: worker, mutate: func(f *facts.Facts) { f.Init = "sshd" }, check: "init", want: Fail},
		{name: "clock not synced", m: worker, mutate: func(f *facts.Facts) { f.TimeSynced = "no"; f.TimeSyncService = "" }, check: "time-sync", want: Warn, reason: "install chrony"},
		{name: "apiserver port busy", m: cp, mutate: func(f *facts.Facts) { f.ListeningTCP = []int{22, 6443} }, check: "ports", want: Fail, reason: "6443"},
		{name: "swarm manager port busy", orch: inventory.Swarm, m: manager, mutate: func(f *facts.Facts) { f.ListeningTCP = []int{2377} }, check: "ports", want: Fail, reason: "2377"},
		{name: "swarm ports held by this host's swarm node", orch: inventory.Swarm, m: manager, mutate: func(f *facts.Facts) { f.ListeningTCP = []int{2377, 7946}; f.Swarm = "active" }, check: "ports", want: Pass, reason: "in use by this host's swarm node"},
		{name: "swarm port busy, swarm inactive", orch: inventory.Swarm, m: manager, mutate: func(f *facts.Facts) { f.ListeningTCP = []int{2377}; f.Swarm = "inactive" }, check: "ports", want: Fail, reason: "2377"},
		{name: "kubernetes ports held by this host's kubeadm node", m: cp, mutate: func(f *facts.Facts) {
			f.ListeningTCP = []int{22, 6443, 2379, 10250}
			f.KubeletServer = "https://10.0.0.1:6443"
		}, check: "ports", want: Pass, reason: "in use by this host's Kubernetes node (API https://10.0.0.1:6443)"},
		{name: "kubelet port busy on a host that is no kubeadm node", m: worker, mutate: func(f *facts.Facts) { f.ListeningTCP = []int{10250} }, check: "ports", want: Fail, reason: "10250"},
		{name: "kubeadm node's ports under swarm are busy", orch: inventory.Swarm, m: manager, mutate: func(f *facts.Facts) {
			f.ListeningTCP = []int{2377}
			f.KubeletServer = "https://10.0.0.1:6443"
		}, check: "ports", want: Fail, reason: "2377"},
		{name: "worker ports free", m: worker, check: "ports", want: Pass},
		{name: "hostname differs", m: worker, mutate: func(f *facts.Facts) { f.Hostname = "localhost" }, check: "hostname", want: Warn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := healthy()
			if tt.mutate != nil {
				tt.mutate(f)
			}
			orch := tt.orch
			if orch == "" {
				orch = inventory.Kubernetes
			}
			var got *Result
			var choices []string
			if tt.secureBoot != "" {
				choices = append(choices, "secureBoot: "+tt.secureBoot)
			}
			if tt.source != "" {
				choices = append(choices, "driverSource: "+tt.source)
			}
			for _, r := range CheckHost(testInventory(orch, tt.driver, strings.Join(choices, ", ")), tt.m, f) {
				if r.Check == tt.check {
					got = &r
				}
			}
			if got == nil {
				t.Fatalf("no %q check in the results", tt.check)
			}
			if got.Status != tt.want || !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("%s = %s %q, want %s containing %q", tt.check, got.Status, got.Reason, tt.want, tt.reason)
			}
		})
	}
}

func TestHealthyHostPassesEverything(t *testing.T) {
	m := inventory.Machine{Name: "gpu-001", Roles: []inventory.Role{inventory.RoleWorker}}
	for _, r := range CheckHost(testInventory(inventory.Kubernetes, ""), m, healthy()) {
		if r.Status != Pass {
			t.Errorf("%s: %s %s", r.Check, r.Status, r.Reason)
		}
	}
}

func TestCheckClusterFindsClones(t *testing.T) {
	a, b, c := healthy(), healthy(), healthy()
	a.Hostname, b.Hostname, c.Hostname = "gpu-001", "gpu-002", "gpu-003"
	a.MachineID, b.MachineID, c.MachineID = "m1", "m1", "m3"
	a.ProductUUID, b.ProductUUID, c.ProductUUID = "u1", "u2", ""
	got := CheckCluster(map[string]*facts.Facts{"gpu-001": a, "gpu-002": b, "gpu-003": c})
	if len(got) != 2 {
		t.Fatalf("got %+v, want the shared machine-id on gpu-001 and gpu-002", got)
	}
	for _, r := range got {
		if r.Check != "unique-machine-id" || r.Status != Fail || r.Reason != "machine-id m1 is shared by gpu-001, gpu-002" {
			t.Errorf("%+v", r)
		}
	}
}

// What plan and preflight decide for each GPU generation (by the device id
// the PCI bus shows before any driver) with the driver and CUDA asked for:
// refused before anything is installed, naming the branch or toolkit that
// fits, or passed.
func TestGPUGenerationsAgainstTheDriver(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, device, driver, cuda, modules string
		host                                string // the host entry's own versions
		want                                Status
		reason                              string
	}{
		{name: "Kepler K80 on the default 580", device: "0x102d", want: Fail, reason: "Kepler GPU(s) 0000:17:00.0 (device 0x102d): driver branch 580 dropped Kepler GPUs: the last branch that drives them is 470; set this host's nvidiaDriver (spec.hosts[].nvidiaDriver) or spec.versions.nvidiaDriver to 470"},
		{name: "Kepler K80 with its own 470", device: "0x102d", host: `nvidiaDriver: "470"`, want: Pass, reason: "driver 470, proprietary kernel modules (GPU 0000:17:00.0 (device 0x102d) is Kepler, older than Turing)"},
		{name: "Maxwell M60 on 590", device: "0x13f2", driver: "590.48.01", cuda: "13.1", want: Fail, reason: "the last branch that drives them is 580"},
		{name: "Pascal P100 on 580", device: "0x15f8", want: Pass, reason: "driver 580.95.05, proprietary kernel modules"},
		{name: "Pascal P40 with CUDA 13.0", device: "0x1b38", cuda: "13.0", want: Fail, reason: "CUDA 13.0 no longer targets Pascal GPUs: the last toolkit that does is 12.9; set this host's cuda (spec.hosts[].cuda) to 12.9"},
		{name: "Volta V100 with its own CUDA 12.9", device: "0x1db4", cuda: "13.0", host: `cuda: "12.9"`, want: Pass, reason: "CUDA toolkit 12.9"},
		{name: "Volta V100 with open modules asked for", device: "0x1db4", modules: "open", want: Fail, reason: "open kernel modules drive Turing and newer GPUs only"},
		{name: "Volta V100 on 595", device: "0x1db6", driver: "595.45.04", cuda: "13.2", want: Fail, reason: "driver branch 595 dropped Volta GPUs"},
		{name: "Turing T4 on 610", device: "0x1eb8", driver: "610.43.02", cuda: "13.3", want: Pass, reason: "open kernel modules"},
		{name: "Ampere A100 on 580", device: "0x20b0", cuda: "13.0", want: Pass},
		{name: "Ada L40S on 535", device: "0x26b9", driver: "535.54.03", cuda: "12.2", want: Pass},
		{name: "Hopper H100 given 470", device: "0x2330", host: `nvidiaDriver: "470"`, want: Fail, reason: "they need branch 520 or newer"},
		{name: "Blackwell B200 on 535", device: "0x2901", driver: "535.54.03", cuda: "12.2", want: Fail, reason: "Blackwell GPU(s) 0000:17:00.0 (device 0x2901): driver branch 535 predates Blackwell GPUs: they need branch 570 or newer"},
		{name: "Blackwell B200 on 580", device: "0x2901", cuda: "13.0", want: Pass},
		{name: "a GPU newer than the table", device: "0x3fff", want: Pass, reason: "open kernel modules (every GPU is Turing or newer)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			driver := cmp.Or(tt.driver, "580.95.05")
			doc := "apiVersion: gpukit.dev/v1alpha1\nkind: Cluster\nmetadata: {name: t}\nspec:\n" +
				"  hosts:\n  - {name: gpu-001, address: 10.0.0.1, roles: [control-plane, worker], cudaToolkit: " + strconv.FormatBool(tt.cuda != "") + cmp.Or(", "+tt.host, "") + "}\n" +
				fmt.Sprintf("  versions: {nvidiaDriver: %q, cuda: %q}\n", driver, cmp.Or(tt.cuda, "13.0"))
			if tt.host == "" {
				doc = strings.Replace(doc, ", }", "}", 1)
			}
			if tt.modules != "" {
				doc += "  nvidia: {kernelModules: " + tt.modules + "}\n"
			}
			inv, err := inventory.Parse("t.yaml", []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			f := healthy()
			f.PCIGPUs[0].DeviceID = tt.device
			var got *Result
			for _, r := range CheckHost(inv, inv.Machines[0], f) {
				if r.Check == "nvidia" {
					got = &r
				}
			}
			if got == nil || got.Status != tt.want || !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("nvidia check = %+v, want %s containing %q", got, tt.want, tt.reason)
			}
		})
	}
}
