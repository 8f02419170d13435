package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/gpukit/gpukit/pkg/engine/enginetest"
	"github.com/gpukit/gpukit/pkg/ssh"
)

// gpuSim is a fleet of Debian 12 GPU hosts with the NVIDIA stack installed,
// as the NVIDIA layer's and the upgrade's scripts see them (recognised by
// their command names; versions read from the rendered scripts). It is a
// unit-test model for the API tests, whose subject is the rollout's use of
// the real API server; the lab tests run the real scripts on real hosts.
// Each host's state is a JSON file in dir, so that a second process (the
// killed and resumed gpukit of the SIGKILL test) sees the same hosts.
type gpuSim struct {
	dir string
	mu  sync.Mutex
}

// simState is one host.
type simState struct {
	GPU       bool              `json:"gpu"`
	Pkgs      map[string]string `json:"pkgs"`
	Loaded    string            `json:"loaded"`
	Marker    bool              `json:"marker"`
	Boot      int               `json:"boot"`
	Rebooting int               `json:"rebooting"`
	Persist   bool              `json:"persist"`
	// Broken: after the next reboot nvidia-smi cannot talk to the driver
	// (a deliberately broken node).
	Broken bool `json:"broken"`
	// Apps are processes computing on the GPUs (nvidia-smi
	// --query-compute-apps).
	Apps string `json:"apps,omitempty"`
	// RebootDials is how many dials a reboot refuses (default 1).
	RebootDials int `json:"rebootDials,omitempty"`
	// Writes are the write steps run on the host, in order.
	Writes []string `json:"writes"`
}

const simGPUs = 2

func newGPUSim(dir string, gpuHosts []string, cpuHosts []string, driver string) (*gpuSim, error) {
	s := &gpuSim{dir: dir}
	for _, h := range gpuHosts {
		st := &simState{GPU: true, Pkgs: map[string]string{"dkms": "3.0.10-8"}, Loaded: driver, Boot: 1, Persist: true}
		for _, p := range []string{"nvidia-open", "nvidia-persistenced"} {
			st.Pkgs[p] = driver + "-1"
		}
		for _, p := range []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"} {
			st.Pkgs[p] = "1.20.0-1"
		}
		if err := s.save(h, st); err != nil {
			return nil, err
		}
	}
	for _, h := range cpuHosts {
		if err := s.save(h, &simState{Pkgs: map[string]string{}, Boot: 1}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *gpuSim) load(host string) (*simState, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, host+".json"))
	if err != nil {
		return nil, err
	}
	st := &simState{}
	return st, json.Unmarshal(b, st)
}

func (s *gpuSim) save(host string, st *simState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, "."+host+".json")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.dir, host+".json"))
}

// update changes a host's state under the lock.
func (s *gpuSim) update(host string, f func(st *simState)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.load(host)
	if err != nil {
		return err
	}
	f(st)
	return s.save(host, st)
}

func (s *gpuSim) state(host string) *simState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.load(host)
	if err != nil {
		panic(err)
	}
	return st
}

var (
	simWant = regexp.MustCompile(`(?m)^want='?([0-9.]+)'?$`)
	simPkgs = regexp.MustCompile(`(?m)^pkgs=\(([^)]*)\)$`)
	simTKv  = regexp.MustCompile(`(?m)^v='?([0-9.]+)-1'?$`)
)

// Fleet is the recording executor over the simulated hosts.
func (s *gpuSim) Fleet() *enginetest.Fleet {
	return &enginetest.Fleet{Handler: s.handle, BeforeDial: s.dial}
}

func (s *gpuSim) dial(_ context.Context, host string) error {
	var err error
	uerr := s.update(host, func(st *simState) {
		if st.Rebooting == 0 {
			return
		}
		st.Rebooting--
		if st.Rebooting > 0 {
			err = errors.New("dial tcp: connect: connection refused")
			return
		}
		st.Boot++
		st.Marker = false
		st.Persist = true
		st.Loaded = simUpstream(st.Pkgs["nvidia-open"])
	})
	return errors.Join(err, uerr)
}

func simUpstream(v string) string {
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		return v[:i]
	}
	return v
}

func (s *gpuSim) handle(_ context.Context, e *enginetest.Executor, cmd ssh.Command) (ssh.Result, error) {
	out := func(text string) (ssh.Result, error) { return ssh.Result{Stdout: []byte(text)}, nil }
	var res ssh.Result
	var rerr error
	err := s.update(e.Host, func(st *simState) {
		write := func() { st.Writes = append(st.Writes, cmd.Name) }
		switch cmd.Name {
		case "probe facts":
			res, rerr = out(simFacts(e.Host, st.GPU))
		case "nvidia state":
			res, rerr = out(st.nvidiaState())
		case "set up the driver's package source":
			write()
		case "install the driver":
			write()
			v := simWant.FindStringSubmatch(cmd.Script)
			p := simPkgs.FindStringSubmatch(cmd.Script)
			if v == nil || p == nil {
				res, rerr = ssh.Result{ExitCode: 2}, fmt.Errorf("gpuSim: cannot read the driver script")
				return
			}
			for _, name := range append(strings.Fields(p[1]), "nvidia-persistenced") {
				st.Pkgs[name] = v[1] + "-1"
			}
			if st.Loaded != v[1] {
				st.Marker = true
			}
		case "enable persistence mode":
			write()
			st.Persist = true
		case "install the container toolkit":
			write()
			if v := simTKv.FindStringSubmatch(cmd.Script); v != nil {
				for _, name := range []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"} {
					st.Pkgs[name] = v[1] + "-1"
				}
			}
		case "stop the GPU consumers":
			write()
			if st.Apps != "" && strings.Contains(cmd.Script, "query-compute-apps") {
				res, rerr = ssh.Result{ExitCode: 3, Stderr: []byte("gpukit: processes are computing on the GPUs")}, &ssh.ExitError{Command: cmd.Name, Code: 3, StderrTail: "gpukit: processes are computing on the GPUs: " + st.Apps}
				return
			}
			st.Persist = false
		case "reboot":
			write()
			st.Rebooting = max(2, st.RebootDials)
		case "wait for the boot to finish":
			res, rerr = out("running")
		case "nvidia health":
			res, rerr = out(fmt.Sprintf(simHealthXML, st.Loaded))
		case "etcd snapshot":
			write()
			res, rerr = out("gpukit: etcd snapshot (1024 bytes)")
		default:
			res, rerr = ssh.Result{ExitCode: 127}, fmt.Errorf("gpuSim: unexpected command %q", cmd.Name)
		}
	})
	if err != nil {
		return ssh.Result{}, err
	}
	return res, rerr
}

func simFacts(host string, gpu bool) string {
	s := "os.id=debian\nos.version=12\nos.pretty=Debian GNU/Linux 12 (bookworm)\nkernel=6.1.0-26-amd64\narch=x86_64\n" +
		"hostname=" + host + "\ncpus=64\nmem.kib=528000000\nroot.avail.kib=400000000\nmachine_id=id-" + host +
		"\nsecureboot=SecureBoot disabled\ninit=systemd\ntimesync=yes\nlisten.tcp=22\n"
	if gpu {
		for i := range simGPUs {
			s += fmt.Sprintf("pci.gpu=0000:%02x:00.0 0x2330\n", 0x17+i)
		}
	}
	return s
}

func (st *simState) nvidiaState() string {
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, v) }
	kv("kernel", "6.1.0-26-amd64")
	kv("boot_id", fmt.Sprintf("boot-%d", st.Boot))
	if !st.GPU {
		return b.String()
	}
	kv("headers", "yes")
	kv("nouveau.blacklisted", "yes")
	kv("module.loaded", st.Loaded)
	if st.Marker {
		kv("reboot.required", "gpukit")
	}
	names := make([]string, 0, len(st.Pkgs))
	for n := range st.Pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		kv("pkg", n+" "+st.Pkgs[n]+" yes")
	}
	kv("unattended.blacklist", "yes")
	kv("persistenced.dropin", "yes")
	active := "inactive"
	if st.Persist {
		active = "active"
	}
	kv("service", "nvidia-persistenced enabled "+active)
	kv("nvswitch.pci", "0")
	if st.Broken && st.Boot > 1 {
		kv("smi.error", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
		return b.String()
	}
	persistence := "Disabled"
	if st.Persist {
		persistence = "Enabled"
	}
	for i := range simGPUs {
		kv("smi.gpu", fmt.Sprintf("%d, GPU-%d, NVIDIA H100 80GB HBM3, 81559, %s, Disabled, %s", i, i, st.Loaded, persistence))
	}
	return b.String()
}

const simHealthXML = `<?xml version="1.0" ?>
<nvidia_smi_log>
  <driver_version>%s</driver_version>
  <attached_gpus>1</attached_gpus>
  <gpu id="00000000:17:00.0">
    <product_name>NVIDIA H100 80GB HBM3</product_name>
    <persistence_mode>Enabled</persistence_mode>
  </gpu>
</nvidia_smi_log>
`
